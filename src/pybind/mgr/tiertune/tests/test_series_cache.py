"""models.SeriesCache (the arrays kept across ticks) gives what rebuilding
them from the whole history gives: the same rows, the same model (its
floats to the last bits: see FLOAT_REL_TOL)."""

import dataclasses
from functools import partial

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import RecordingGetter, same_value
from tiertune import models
from tiertune.models import SeriesCache, fit
from tiertune.rates import HistoryBook, PoolHistory
from tiertune.sampling import PoolCounters, PoolSample, agent_levels, take_samples
from tiertune.topology import CacheTier, HitSetSettings, Ratios, cache_tiers

MiB = 1 << 20


def derived_rows_as_from_columns(s):
    """The rows and masks kept per interval are what the same numpy
    operations on the columns give (as fit() computed them every call
    before they were kept), bit for bit."""
    same = partial(np.array_equal, equal_nan=True)
    assert same(s.inflow_bytes, s.inflow * s.dt)
    assert same(s.base_bytes, s.px_read_bytes + np.where(s.flush > 0.0, 0.0, s.px_write_bytes))
    assert same(s.active, s.total_ops > models.HIT_MIN_OPS_SEC)
    assert same(s.px_known, ~np.isnan(s.proxied_ops))
    assert same(s.px_write_known, ~np.isnan(s.px_write_bytes))
    assert same(s.has_fill, ~np.isnan(s.fill))
    assert same(s.hit_points, s.active & s.has_fill)
    assert same(s.flushing, (s.n_low + s.n_high) > 0)
    assert same(s.growing, s.growth > models.IDLE_FLOOR_BPS)


def check(cache, entries, tier, limits=models.DEFAULT_LIMITS):
    """The cache against a rebuild, for this history: the same rows, so
    exactly the same model (not merely close: a figure at a rounding
    boundary, such as a ceil() in a recommendation, must not flip)."""
    ref = models._series(entries, tier)
    got = cache.series(entries, tier)
    for name in models._SERIES_FIELDS + models._SERIES_MASKS:
        assert np.array_equal(getattr(got, name), getattr(ref, name), equal_nan=True), name
    derived_rows_as_from_columns(got)
    same_value(fit(entries, tier, limits, cache), fit(entries, tier, limits))
    if entries:
        assert cache.levels == agent_levels(tier, entries[-1].sample.counters)


# --- the real recorded burst ------------------------------------------------

def real_samples(burst):
    tiers = cache_tiers(burst['samples'][0]['inputs']['osd_map'])
    (pid,) = tiers
    return tiers[pid], [take_samples(RecordingGetter(rec['inputs']), tiers, rec['mono'],
                                     rec['wall'])[pid] for rec in burst['samples']]


def replayed(samples, times):
    """The recording played `times` times end to end: each replay starts
    with counters lower than the last sample's (a reset: no rates)."""
    span = samples[-1].mono - samples[0].mono + 30.0
    return [dataclasses.replace(s, mono=s.mono + k * span, wall=s.wall + k * span)
            for k in range(times) for s in samples]


def test_real_burst_same_as_rebuild_while_the_history_fills_and_trims(burst):
    tier, samples = real_samples(burst)
    limits = models.PromoteLimits(max_objects_sec_per_osd=burst['spec']['promote_max_objects_sec'],
                                  max_bytes_sec_per_osd=burst['spec']['promote_max_bytes_sec'],
                                  osds=burst['spec']['fast_osds'])
    for size in (2, 5, 16, 120):
        h, cache = PoolHistory(size), SeriesCache()
        for s in replayed(samples, 3):
            h.add(s, agent_levels(tier, s.counters).dirty_bytes)
            check(cache, list(h.entries), tier, limits)


def test_real_burst_same_as_rebuild_across_resizes_and_tier_changes(burst):
    tier, samples = real_samples(burst)
    book, cache = HistoryBook(12), SeriesCache()
    for i, s in enumerate(replayed(samples, 4)):
        if i % 11 == 10:
            book.resize(book.size + (7 if book.size < 8 else -5))
        if i % 17 == 16:   # the operator changed the target: fill changes
            tier = dataclasses.replace(tier, target_max_bytes=tier.target_max_bytes + MiB)
        book.record({tier.pool_id: s}, {tier.pool_id: agent_levels(tier, s.counters).dirty_bytes},
                    [tier.pool_id])
        check(cache, list(book.get(tier.pool_id).entries), tier)


def test_another_history_or_a_replaced_entry_is_rebuilt(burst):
    tier, samples = real_samples(burst)
    a, b = PoolHistory(10), PoolHistory(10)
    for s in samples[:8]:
        a.add(s, 0)
    for s in samples[3:12]:
        b.add(s, 1)
    cache = SeriesCache()
    for entries in (list(a.entries), list(b.entries), list(a.entries), [], list(a.entries)):
        check(cache, entries, tier)
    # The same newest entry after one the cache never saw: not a
    # continuation of what it mirrors (a deque only drops from the front).
    check(cache, [b.entries[0], a.entries[-1]], tier)
    check(cache, list(a.entries), tier)


def test_series_is_read_only(burst):
    tier, samples = real_samples(burst)
    h, cache = PoolHistory(10), SeriesCache()
    for s in samples:
        h.add(s, 0)
    s = cache.series(list(h.entries), tier)
    assert not s.inflow.flags.writeable
    assert not s.active.flags.writeable


def test_pools_sampled_together_share_weights_and_others_get_their_own(burst):
    """A tick's pools were sampled at the same moments: their weights are
    computed once.  A series with other times never gets them, and every
    series' weights are what _weights gives its own rows."""
    from tiertune import series
    tier, samples = real_samples(burst)
    a, b = PoolHistory(10), PoolHistory(10)
    for s in samples[:10]:
        a.add(s, 0)
    for s in samples[2:12]:
        b.add(s, 1)
    first = models._series(list(a.entries), tier)
    second = models._series(list(a.entries), tier)
    assert second.short_w is first.short_w
    other = models._series(list(b.entries), tier)
    again = models._series(list(a.entries), tier)
    for s in (first, other, again):
        age = s.t - s.t[-1]
        assert np.array_equal(s.short_w, series._weights(s.short_gain, age, series.SHORT_HORIZON_S))
        assert np.array_equal(s.long_w, series._weights(s.long_gain, age, series.LONG_HORIZON_S))
        assert (s.short_total, s.long_total) == (float(s.short_w.sum()), float(s.long_w.sum()))
        assert not s.short_w.flags.writeable
    assert not np.array_equal(other.short_w, first.short_w)


# --- synthetic histories ----------------------------------------------------

def make_tier(**kw):
    t = CacheTier(pool_id=2, pool='cache', base_pool_id=1, base_pool='base',
                  base_is_erasure=False, cache_mode='writeback', pg_num=16,
                  target_max_bytes=64 * MiB, target_max_objects=0,
                  ratios=Ratios(dirty=0.4, dirty_high=0.6, full=0.8),
                  hit_set=HitSetSettings('bloom', 1200, 4, 0.05, 0, 0),
                  min_read_recency_for_promote=1, min_write_recency_for_promote=1,
                  min_flush_age_s=0, min_evict_age_s=0, last_change=1)
    return dataclasses.replace(t, **kw)


CUMULATIVE = ('num_flush', 'num_flush_kb', 'num_evict', 'num_evict_kb', 'num_promote',
              'num_read', 'num_read_kb', 'num_write', 'num_write_kb')
BASE = ('num_read', 'num_read_kb', 'num_write', 'num_write_kb')

step = st.fixed_dictionaries({
    # Some too short for a rate, some not after the last (dropped as duplicates).
    'dt': st.sampled_from([30.0, 30.0, 30.0, 5.0, 0.5, 0.0, -3.0, 61.7]),
    'grow': st.dictionaries(st.sampled_from(CUMULATIVE), st.integers(0, 5000), max_size=6),
    'base_grow': st.dictionaries(st.sampled_from(BASE), st.integers(0, 5000), max_size=4),
    'objects': st.integers(0, 400),
    'kib_per_object': st.integers(0, 4096),
    'dirty': st.integers(0, 400),
    'omap': st.integers(0, 20),
    'archive': st.integers(0, 4),
    'low': st.integers(0, 8),
    'high': st.integers(0, 8),
    'reset': st.integers(0, 14).map(lambda x: x == 0),    # counters back to 0
    'no_base': st.integers(0, 9).map(lambda x: x == 0),
    'resize': st.one_of(st.none(), st.none(), st.none(), st.integers(2, 12)),
    'target': st.one_of(st.none(), st.none(), st.none(), st.none(),
                        st.sampled_from([(0, 0), (0, 300), (32 * MiB, 0), (64 * MiB, 200)])),
    'erasure': st.integers(0, 19).map(lambda x: x == 0),
})


@settings(max_examples=150, deadline=None)
@given(size=st.integers(2, 12), steps=st.lists(step, max_size=60))
def test_synthetic_same_as_rebuild(size, steps):
    tier = make_tier()
    book, cache = HistoryBook(size), SeriesCache()
    mono, cache_c, base_c = 1000.0, PoolCounters(), PoolCounters()
    for x in steps:
        if x['resize'] is not None:
            book.resize(x['resize'])
        if x['target'] is not None:
            tier = make_tier(target_max_bytes=x['target'][0], target_max_objects=x['target'][1],
                             base_is_erasure=tier.base_is_erasure)
        if x['erasure']:
            tier = dataclasses.replace(tier, base_is_erasure=not tier.base_is_erasure)
        mono += x['dt']
        if x['reset']:
            cache_c, base_c = PoolCounters(), PoolCounters()
        cache_c = dataclasses.replace(
            cache_c, **{k: getattr(cache_c, k) + v for k, v in x['grow'].items()},
            num_objects=x['objects'] + x['omap'] + x['archive'],
            num_bytes=x['objects'] * x['kib_per_object'] * 1024 + x['archive'] * 4096,
            num_objects_dirty=min(x['dirty'], x['objects'] + x['omap']),
            num_objects_omap=x['omap'], num_objects_hit_set_archive=x['archive'],
            num_bytes_hit_set_archive=x['archive'] * 4096,
            num_flush_mode_low=x['low'], num_flush_mode_high=x['high'])
        base_c = dataclasses.replace(
            base_c, **{k: getattr(base_c, k) + v for k, v in x['base_grow'].items()})
        s = PoolSample(pool_id=tier.pool_id, mono=mono, wall=mono, num_pg=16,
                       counters=cache_c, base=None if x['no_base'] else base_c)
        book.record({tier.pool_id: s},
                    {tier.pool_id: agent_levels(tier, cache_c).dirty_bytes}, [tier.pool_id])
        check(cache, list(book.get(tier.pool_id).entries), tier)
