import copy

from conftest import samples_by_phase
from tiertune.topology import cache_tiers, pool_ids_by_name


def test_cache_pool_and_its_base_from_real_osd_map(burst):
    osd_map = burst['samples'][0]['inputs']['osd_map']
    tiers = cache_tiers(osd_map)
    assert len(tiers) == 1
    (tier,) = tiers.values()
    spec = burst['spec']
    assert tier.pool == spec['cache_pool']
    assert tier.base_pool == spec['base_pool']
    assert tier.base_pool_id == pool_ids_by_name(osd_map)[spec['base_pool']]
    assert tier.cache_mode == 'writeback'
    assert tier.target_max_bytes == spec['target_max_bytes']
    assert (tier.ratios.dirty, tier.ratios.dirty_high, tier.ratios.full) == \
        (spec['dirty_ratio'], spec['dirty_high_ratio'], spec['full_ratio'])
    assert tier.hit_set.type == 'bloom'
    assert (tier.hit_set.count, tier.hit_set.period_s) == \
        (spec['hit_set_count'], spec['hit_set_period'])
    assert tier.min_read_recency_for_promote == spec['min_read_recency_for_promote']
    assert tier.min_write_recency_for_promote == spec['min_write_recency_for_promote']
    assert tier.pg_num == spec['cache_pg_num']
    assert tier.has_target
    assert not tier.base_is_erasure
    assert tier.last_change > 0   # the mon dumps it as a string


def test_base_pool_alone_is_not_a_tier(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    osd_map['pools'] = [p for p in osd_map['pools'] if p['tier_of'] < 0]
    assert cache_tiers(osd_map) == {}


def test_cache_mode_none_is_not_a_cache_pool(burst):
    # As after `osd tier cache-mode CACHE none`: tier_of stays, the cache is off.
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    for p in osd_map['pools']:
        if p['tier_of'] >= 0:
            p['cache_mode'] = 'none'
    assert cache_tiers(osd_map) == {}


def test_erasure_coded_base_is_flagged(burst):
    osd_map = copy.deepcopy(samples_by_phase(burst, 'drain')[-1]['inputs']['osd_map'])
    for p in osd_map['pools']:
        if p['tier_of'] < 0:
            p['type'] = 3   # pg_pool_t::TYPE_ERASURE
    (tier,) = cache_tiers(osd_map).values()
    assert tier.base_is_erasure


def test_ratio_micros_become_fractions(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    for p in osd_map['pools']:
        if p['tier_of'] >= 0:
            p['cache_target_dirty_ratio_micro'] = 350000
            p['cache_target_dirty_high_ratio_micro'] = 450000
            p['cache_target_full_ratio_micro'] = 700000
    (tier,) = cache_tiers(osd_map).values()
    assert tier.ratios.as_dict() == {'dirty': 0.35, 'dirty_high': 0.45, 'full': 0.7}
