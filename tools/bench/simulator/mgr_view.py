"""The simulated tier as ceph-mgr shows it: `get('osd_map')` pool entries and
`get('pool_stats')`, in the shapes 16.2.15 returns (the fields tiertune
reads; see tests/fixtures/overwrite_burst.json for a real dump)."""

from typing import Any, Callable, Dict

from simulator.tier import MICRO, TierSim

BASE_ID, CACHE_ID = 1, 2
BASE, CACHE = 'base', 'cache'


def osd_map(sim: TierSim) -> Dict[str, Any]:
    r, t = sim.ratios, sim.sc.tier
    cache = {
        'pool': CACHE_ID, 'pool_name': CACHE, 'type': 1, 'tier_of': BASE_ID,
        'cache_mode': 'writeback', 'pg_num': sim.P, 'crush_rule': 1,
        'target_max_bytes': sim.sc.target_max_bytes, 'target_max_objects': 0,
        'cache_target_dirty_ratio_micro': int(round(r.dirty * MICRO)),
        'cache_target_dirty_high_ratio_micro': int(round(r.dirty_high * MICRO)),
        'cache_target_full_ratio_micro': int(round(r.full * MICRO)),
        'hit_set_params': {'type': 'bloom', 'false_positive_probability': 0.05},
        # No hit sets is count 0 and period 0, as the cluster backend sets
        # the pool up for the same scenario.
        'hit_set_period': int(t.hit_set_period_s) if sim.hit_set_count > 0 else 0,
        'hit_set_count': sim.hit_set_count,
        'hit_set_search_last_n': 0, 'hit_set_grade_decay_rate': 0,
        'min_read_recency_for_promote': int(t.min_read_recency),
        'min_write_recency_for_promote': int(t.min_write_recency),
        'cache_min_flush_age': 0, 'cache_min_evict_age': 0,
        'last_change': sim.last_change_epoch,
    }
    base = {'pool': BASE_ID, 'pool_name': BASE, 'type': 1, 'tier_of': -1, 'cache_mode': 'none',
            'pg_num': sim.P, 'tiers': [CACHE_ID], 'read_tier': CACHE_ID,
            'write_tier': CACHE_ID, 'crush_rule': 2}
    return {'epoch': sim.epoch, 'flags': '', 'pools': [base, cache],
            'osds': [{'osd': i, 'up': 1} for i in range(sim.osds)]}


def pool_stats(sim: TierSim) -> Dict[str, Any]:
    return {'pool_stats': [
        {'poolid': CACHE_ID, 'num_pg': sim.P, 'stat_sum': sim.stat_sum()},
        {'poolid': BASE_ID, 'num_pg': sim.P, 'stat_sum': sim.base_stat_sum()},
    ]}


def getter(sim: TierSim) -> Callable[[str], Any]:
    """MgrModule.get for the names tiertune's tick calls."""
    def get(name: str) -> Any:
        if name == 'osd_map':
            return osd_map(sim)
        if name == 'pool_stats':
            return pool_stats(sim)
        raise KeyError(f'the simulator does not serve get({name!r})')
    return get
