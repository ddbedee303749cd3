"""Property tests of what reaches the mon: odd but possible pool stats,
tiers, bounds and knobs, through the real sampling, rates, models, law and
tuner code, with the mgr replaced by an Effects that records the `osd pool
set`s (pure logic: no mgr, no cluster).  Written from a review helper's
fuzzing, which found nothing; kept so that nothing unsafe creeps in."""

import dataclasses
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiertune.bounds import Bounds, Knobs
from tiertune.rates import HistoryBook
from tiertune.report import status_row
from tiertune.sampling import CUMULATIVE_COUNTERS, PoolCounters, PoolSample, agent_levels
from tiertune.topology import CacheTier, HitSetSettings, Ratios
from tiertune.tuner import Effects, Tuner

GIB, MIB = 1 << 30, 1 << 20
BIG = 1 << 50
NAMES = {'cache_target_dirty_ratio': 'dirty', 'cache_target_dirty_high_ratio': 'dirty_high',
         'cache_target_full_ratio': 'full'}
RATIO = st.sampled_from([0.0, 1.0, 0.4, 0.6, 0.8, 0.5, 0.1, 0.98, 0.3, 0.9, 4e-7, 1 - 4e-7])
BOUND = st.sampled_from([0.0, 0.98, 0.1, 0.3, 0.5, 0.6, 0.8, 0.9, 0.55])
STEP = st.sampled_from([0, 0, 0, 1, 1000, 123456, BIG])
LEVEL = st.sampled_from([0, 1, 10, 1000, 10 ** 6, BIG, -1, -1000])
LEVELS = ('num_objects', 'num_bytes', 'num_objects_dirty', 'num_flush_mode_low',
          'num_flush_mode_high', 'num_evict_mode_some', 'num_evict_mode_full',
          'num_objects_hit_set_archive', 'num_bytes_hit_set_archive', 'num_objects_omap')


@st.composite
def bounds(draw):
    b = Bounds(*(draw(BOUND) for _ in range(6)))
    return b if b.problem() is None else Bounds()


@st.composite
def knobs(draw):
    k = Knobs(horizon_s=draw(st.sampled_from([1e-9, 1.0, 600.0, 1e12])),
              min_interval_s=draw(st.sampled_from([0.0, 1.0, 600.0])),
              max_step=draw(st.sampled_from([1.0, 0.1, 0.0201, 0.05])),
              deadband=draw(st.sampled_from([0.0201, 0.05, 0.1, 0.999])))
    if k.problem() is not None:
        k = dataclasses.replace(k, deadband=min(k.max_step, 0.05))
    return k if k.problem() is None else Knobs()


def _steady(w, f, low, high, r):
    """A 30 s tick of writes, flushes and reads (cumulative increments),
    and the PGs' flush modes."""
    return (30.0, {'num_write': w, 'num_write_kb': w * 1024, 'num_flush': f,
                   'num_flush_kb': f * 1024, 'num_read': r, 'num_read_kb': r * 4,
                   'num_objects': w, 'num_bytes': w * MIB, 'num_objects_dirty': w},
            False, {'num_flush_mode_low': low, 'num_flush_mode_high': high})


@st.composite
def scenario(draw):
    tier = CacheTier(pool_id=3, pool='cache', base_pool_id=2, base_pool='base',
                     base_is_erasure=draw(st.booleans()), cache_mode='writeback',
                     pg_num=draw(st.sampled_from([1, 16, 65536])),
                     target_max_bytes=draw(st.sampled_from([0, 1, GIB, 1 << 60])),
                     target_max_objects=draw(st.sampled_from([0, 1, 1000, 1 << 40])),
                     ratios=Ratios(draw(RATIO), draw(RATIO), draw(RATIO)),
                     hit_set=draw(st.sampled_from([HitSetSettings('bloom', 1200, 4, 0.05, 0, 0),
                                                   HitSetSettings('none', 0, 0, None, 0, 0)])),
                     min_read_recency_for_promote=1, min_write_recency_for_promote=1,
                     min_flush_age_s=0, min_evict_age_s=0, last_change=1)
    steady = st.builds(_steady, st.sampled_from([0, 0, 10, 100, 1000]),
                       st.sampled_from([0, 0, 5, 50]), st.integers(0, 3), st.integers(0, 2),
                       st.sampled_from([0, 100, 5000]))
    # An interval of 1 s or hours, counters that jump or reset, levels
    # anywhere (negative ones included: a stat a PG merge left short).
    odd = st.tuples(st.sampled_from([1.0, 30.0, 3600.0, 7200.0, 36000.0]),
                    st.dictionaries(st.sampled_from([*CUMULATIVE_COUNTERS, 'num_objects_dirty',
                                                     'num_bytes', 'num_objects']),
                                    STEP, max_size=6),
                    st.booleans(), st.dictionaries(st.sampled_from(LEVELS), LEVEL, max_size=4))
    base_steps = st.dictionaries(st.sampled_from([*CUMULATIVE_COUNTERS, 'num_objects',
                                                  'num_bytes']), STEP, max_size=3)
    ticks = draw(st.lists(st.tuples(st.one_of(steady, steady, steady, odd), base_steps,
                                    st.sampled_from([0, 0, 0, 1, -1])), min_size=8, max_size=40))
    return tier, draw(bounds()), draw(knobs()), ticks


def _json(obj):
    json.dumps(obj, allow_nan=False, default=str)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario())
def test_synthetic_pipeline_sends_the_mon_only_ordered_bounded_steps(sc):
    tier, b, k, ticks = sc
    t = Tuner()
    t.settings.mode = 'on'
    ps = t.settings.pool(3)
    ps.bounds, ps.knobs = b, k
    sets = []

    def failed(msg):
        raise AssertionError(msg)

    eff = Effects(pool_set=lambda pid, pool, var, val: sets.append((var, val)) and None,
                  save_settings=lambda: None, save_history=lambda pid: None,
                  audit=lambda msg: None, log=lambda msg: None, log_error=failed)
    book, c, base = HistoryBook(500), PoolCounters(), PoolCounters()
    mono, last_change, acting = 1000.0, None, tier.pg_num * 3
    for (dt, steps, reset, levels), base_steps, acting_step in ticks:
        base = dataclasses.replace(base, **{n: getattr(base, n) + v
                                            for n, v in base_steps.items()})
        acting = max(0, acting + acting_step * 3)
        mono += dt
        if reset:
            c = dataclasses.replace(c, **{n: 0 for n in CUMULATIVE_COUNTERS})
        c = dataclasses.replace(c, **{**{n: getattr(c, n) + v for n, v in steps.items()},
                                      **levels})
        s = PoolSample(pool_id=3, mono=mono, wall=mono, num_pg=tier.pg_num, counters=c,
                       base=base, acting=acting, base_acting=48, base_pool_id=2)
        book.record({3: s}, {3: agent_levels(tier, c).dirty_bytes}, {3: tier})
        before = len(sets)
        t.step({3: tier}, book, [], {}, 30.0, eff, mono, mono)
        assert 3 not in t.failures, t.failures
        view = t.views[3]
        ev = t.evaluate(3, tier, book, [], {}, 30.0, mono, mono)
        for obj in (ev.decision.as_dict(), ev.model.as_dict(), view.decision.as_dict(),
                    view.model.as_dict(), status_row(tier, book.get(3), mono, view, ps, 'on')):
            _json(obj)                     # strict JSON: no NaN or inf
        d, new = view.decision, sets[before:]
        cur = tier.ratios.as_dict()
        start = dict(cur)
        ordered = cur['dirty'] <= cur['dirty_high'] <= cur['full']
        for var, val in new:
            v = float(val)
            assert math.isfinite(v) and 0.0 <= v <= 1.0, (var, val)
            cur[NAMES[var]] = v
            if ordered and d.next.dirty <= d.next.dirty_high <= d.next.full:
                # every command leaves the pool ordered
                assert cur['dirty'] <= cur['dirty_high'] <= cur['full'], (start, new)
        if not new:
            continue
        assert d.action == 'change'
        wait = max(k.min_interval_s, tier.hit_set.period_s if tier.hit_set.active else 0)
        assert last_change is None or mono - last_change >= wait - 1e-6
        last_change = mono
        for n in ('dirty', 'dirty_high', 'full'):
            if ordered:
                assert abs(cur[n] - start[n]) <= k.max_step + 1e-6, (n, start, cur, k)
            lo, hi = getattr(b, f'{n}_ratio_min'), getattr(b, f'{n}_ratio_max')
            if lo <= start[n] <= hi:
                assert lo - 1e-6 <= cur[n] <= hi + 1e-6, (n, start, cur, b)
        tier = dataclasses.replace(tier, ratios=Ratios(cur['dirty'], cur['dirty_high'],
                                                       cur['full']))
