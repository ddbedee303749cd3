import copy
import dataclasses

import pytest

from conftest import RecordingGetter, samples_by_phase
from tiertune.sampling import (
    STORE_OVERHEAD_BYTES_PER_OBJECT,
    TICK_SOURCES,
    PoolCounters,
    agent_levels,
    take_samples,
)
from tiertune.topology import cache_tiers


def _tier_and_counters(rec):
    inputs = rec['inputs']
    (tier,) = cache_tiers(inputs['osd_map']).values()
    (entry,) = [e for e in inputs['pool_stats']['pool_stats'] if e['poolid'] == tier.pool_id]
    return tier, PoolCounters.from_stat_sum(entry['stat_sum'])


def test_samples_read_pool_stats_only(burst):
    rec = burst['samples'][-1]
    tiers = cache_tiers(rec['inputs']['osd_map'])
    get = RecordingGetter(rec['inputs'])
    samples = take_samples(get, tiers, mono=10.0, wall=1e9)
    assert get.asked == ['pool_stats']
    assert set(samples) == set(tiers)
    (s,) = samples.values()
    assert s.num_pg == burst['spec']['cache_pg_num']
    assert s.counters.num_promote > 0 and s.counters.num_flush > 0


def test_no_cache_pools_reads_nothing():
    get = RecordingGetter({})
    assert take_samples(get, {}, 1.0, 1.0) == {}
    assert get.asked == []


def test_pool_missing_from_pool_stats_is_left_out(burst):
    rec = copy.deepcopy(burst['samples'][-1])
    tiers = cache_tiers(rec['inputs']['osd_map'])
    rec['inputs']['pool_stats']['pool_stats'] = [
        e for e in rec['inputs']['pool_stats']['pool_stats'] if e['poolid'] not in tiers]
    assert take_samples(RecordingGetter(rec['inputs']), tiers, 1.0, 1.0) == {}


def test_counters_are_the_pool_stat_sum(burst):
    rec = samples_by_phase(burst, 'drain')[-1]
    tier, c = _tier_and_counters(rec)
    (entry,) = [e for e in rec['inputs']['pool_stats']['pool_stats']
                if e['poolid'] == tier.pool_id]
    for f in dataclasses.fields(PoolCounters):
        assert getattr(c, f.name) == entry['stat_sum'][f.name], f.name


def test_empty_tier_has_zero_fill_and_dirty(burst):
    tier, c = _tier_and_counters(samples_by_phase(burst, 'empty')[0])
    lv = agent_levels(tier, c)
    assert (lv.user_objects, lv.dirty_bytes, lv.fill, lv.dirty) == (0, 0, 0.0, 0.0)


def test_levels_after_burst_follow_the_agent_formula(burst):
    tier, c = _tier_and_counters(samples_by_phase(burst, 'drain')[-1])
    lv = agent_levels(tier, c)
    user_objects = c.num_objects - c.num_objects_hit_set_archive
    user_bytes = (c.num_bytes - c.num_bytes_hit_set_archive
                  + STORE_OVERHEAD_BYTES_PER_OBJECT * user_objects)
    assert lv.user_objects == user_objects > 0
    assert lv.user_bytes == user_bytes
    assert lv.dirty_objects == c.num_objects_dirty > 0
    assert lv.dirty_bytes == int(c.num_objects_dirty * user_bytes / user_objects)
    assert lv.fill == pytest.approx(user_bytes / tier.target_max_bytes)
    assert lv.dirty == pytest.approx(lv.dirty_bytes / tier.target_max_bytes)
    assert 0 < lv.dirty < lv.fill < 1


def test_hit_set_archives_do_not_count(burst):
    # Derived from a real sample: pretend 8 of its objects (8 KiB) are hit-set
    # archives, as after a few hit_set_periods.
    tier, c = _tier_and_counters(samples_by_phase(burst, 'drain')[-1])
    with_archives = dataclasses.replace(
        c, num_objects=c.num_objects + 8, num_bytes=c.num_bytes + 8192,
        num_objects_hit_set_archive=8, num_bytes_hit_set_archive=8192)
    assert agent_levels(tier, with_archives) == agent_levels(tier, c)


def test_object_target_wins_when_it_is_the_larger_fraction(burst):
    tier, c = _tier_and_counters(samples_by_phase(burst, 'drain')[-1])
    by_objects = dataclasses.replace(tier, target_max_objects=c.num_objects * 2)
    lv = agent_levels(by_objects, c)
    assert lv.fill == pytest.approx(max(0.5, agent_levels(tier, c).fill))
    tiny = dataclasses.replace(tier, target_max_objects=c.num_objects)
    assert agent_levels(tiny, c).fill == pytest.approx(1.0)
    assert agent_levels(tiny, c).dirty == pytest.approx(c.num_objects_dirty / c.num_objects)


def test_no_target_means_no_levels(burst):
    tier, c = _tier_and_counters(samples_by_phase(burst, 'drain')[-1])
    none = dataclasses.replace(tier, target_max_bytes=0, target_max_objects=0)
    lv = agent_levels(none, c)
    assert not none.has_target
    assert lv.fill is None and lv.dirty is None
    assert lv.dirty_bytes > 0   # still known, just not relative to a target


def test_erasure_base_excludes_omap_objects(burst):
    tier, c = _tier_and_counters(samples_by_phase(burst, 'drain')[-1])
    ec = dataclasses.replace(tier, base_is_erasure=True)
    with_omap = dataclasses.replace(c, num_objects_omap=5)
    lv = agent_levels(ec, with_omap)
    assert lv.user_objects == c.num_objects - c.num_objects_hit_set_archive - 5
    assert lv.dirty_objects == c.num_objects_dirty - 5


def test_tick_sources_are_o_pools():
    assert set(TICK_SOURCES) == {'osd_map', 'pool_stats', 'pg_ready'}
