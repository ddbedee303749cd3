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
    assert tier.overlay and tier.other_tiers == ()


def test_base_pool_alone_is_not_a_tier(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    osd_map['pools'] = [p for p in osd_map['pools'] if p['tier_of'] < 0]
    assert cache_tiers(osd_map) == {}


def test_a_tier_whose_base_has_no_overlay_to_it(burst):
    # As after `osd tier remove-overlay BASE`: a tier still, clients elsewhere.
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    for p in osd_map['pools']:
        if p['tier_of'] < 0:
            p['read_tier'] = p['write_tier'] = -1
    (tier,) = cache_tiers(osd_map).values()
    assert not tier.overlay and tier.overlay_pool == ''


def test_a_tier_whose_base_overlays_another_tier(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    base = next(p for p in osd_map['pools'] if p['tier_of'] < 0)
    other = copy.deepcopy(next(p for p in osd_map['pools'] if p['tier_of'] >= 0))
    other.update(pool=99, pool_name='other')
    osd_map['pools'].append(other)
    base['read_tier'] = base['write_tier'] = 99
    tiers = cache_tiers(osd_map)
    assert tiers[99].overlay
    (tier,) = [t for pid, t in tiers.items() if pid != 99]
    assert not tier.overlay and tier.overlay_pool == 'other'
    # each is the other's fellow tier of the base
    assert tier.other_tiers == ('other',) and tiers[99].other_tiers == (tier.pool,)


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


# A CRUSH dump shaped as `ceph osd crush dump` prints one (synthetic: two
# device classes with their shadow roots, as localcluster builds them).
SYNTHETIC_CRUSH = {
    'buckets': [
        {'id': -1, 'name': 'default', 'items': [{'id': -3}]},
        {'id': -3, 'name': 'host', 'items': [{'id': 0}, {'id': 1}, {'id': 2}, {'id': 3}]},
        {'id': -2, 'name': 'default~ssd', 'items': [{'id': -4}]},
        {'id': -4, 'name': 'host~ssd', 'items': [{'id': 0}, {'id': 1}]},
        {'id': -5, 'name': 'default~hdd', 'items': [{'id': -6}]},
        {'id': -6, 'name': 'host~hdd', 'items': [{'id': 2}, {'id': 3}]},
    ],
    'rules': [
        {'rule_id': 0, 'rule_name': 'replicated_rule',
         'steps': [{'op': 'take', 'item': -1}, {'op': 'choose_firstn'}, {'op': 'emit'}]},
        {'rule_id': 1, 'rule_name': 'fast',
         'steps': [{'op': 'take', 'item': -2, 'item_name': 'default~ssd'}, {'op': 'emit'}]},
        {'rule_id': 2, 'rule_name': 'broken', 'steps': [{'op': 'take', 'item': -99}]},
    ],
}


def test_synthetic_rule_osd_ids_are_the_class_the_rule_takes():
    from tiertune.topology import rule_osd_ids
    assert rule_osd_ids(SYNTHETIC_CRUSH, 0) == [0, 1, 2, 3]
    assert rule_osd_ids(SYNTHETIC_CRUSH, 1) == [0, 1]
    assert rule_osd_ids(SYNTHETIC_CRUSH, 2) is None   # root not in the map
    assert rule_osd_ids(SYNTHETIC_CRUSH, 7) is None   # no such rule
    assert rule_osd_ids({}, 1) is None


def test_crush_rule_of_the_cache_pool(burst):
    (tier,) = cache_tiers(burst['samples'][0]['inputs']['osd_map']).values()
    assert tier.crush_rule >= 1   # the harness's `fast` rule, not the default


def _cache_entry(osd_map, tier_of):
    return next(p for p in osd_map['pools'] if (p['tier_of'] >= 0) == tier_of)


def test_pg_count_changes_in_progress_as_the_osd_map_dumps_them(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    (tier,) = cache_tiers(osd_map).values()
    # The recording's pool was at rest: every count at its target.
    assert tier.pg_change is None and tier.pg_num_target == tier.pg_num == tier.pgp_num
    cache = _cache_entry(osd_map, True)
    n = cache['pg_num']
    # `osd pool set cache pg_num 2n` as Pacific's mon dumps it first: the
    # targets move, the mgr then walks pg_num and pgp_num to them.
    cache.update(pg_num_target=2 * n, pg_placement_num_target=2 * n)
    (tier,) = cache_tiers(osd_map).values()
    assert tier.pg_change == f'pg_num {n} -> {2 * n}, pgp_num {n} -> {2 * n}'
    cache.update(pg_num=2 * n, pg_num_pending=2 * n)
    (tier,) = cache_tiers(osd_map).values()
    assert tier.pg_change == f'pgp_num {n} -> {2 * n}'
    cache.update(pg_placement_num=2 * n)
    assert next(iter(cache_tiers(osd_map).values())).pg_change is None
    # A merge: pg_num_pending is the count about to be.
    cache.update(pg_num_target=n, pg_num_pending=2 * n - 1, pg_placement_num=2 * n - 1,
                 pg_placement_num_target=n)
    assert next(iter(cache_tiers(osd_map).values())).pg_change == (
        f'pg_num {2 * n} -> {n}, pg_num_pending {2 * n} -> {2 * n - 1}, '
        f'pgp_num {2 * n - 1} -> {n}')


def test_a_full_base_is_read_from_its_flags(burst):
    osd_map = copy.deepcopy(burst['samples'][0]['inputs']['osd_map'])
    (tier,) = cache_tiers(osd_map).values()
    assert not tier.base_full
    # As the mon flags a base over its quota (seen on 16.2.15).
    _cache_entry(osd_map, False)['flags_names'] = 'hashpspool,full,full_quota'
    (tier,) = cache_tiers(osd_map).values()
    assert tier.base_full
    # The cache pool's own flag is not its base's; nearfull is no full.
    _cache_entry(osd_map, False)['flags_names'] = 'hashpspool,nearfull'
    _cache_entry(osd_map, True)['flags_names'] = 'hashpspool,incomplete_clones,full'
    assert not next(iter(cache_tiers(osd_map).values())).base_full


def test_filling_osds_and_those_of_a_rule():
    from tiertune.topology import filling_osds, osds_filling_text
    osd_map = {'osds': [
        {'osd': 0, 'state': ['exists', 'up']},
        {'osd': 1, 'state': ['exists', 'up', 'nearfull']},
        {'osd': 2, 'state': ['exists', 'up', 'backfillfull', 'nearfull']},
        {'osd': 3, 'state': ['exists', 'full']},
        {'osd': 4}]}
    filling = filling_osds(osd_map)
    assert filling == {1: 'nearfull', 2: 'backfillfull', 3: 'full'}
    assert osds_filling_text(filling, [0, 2, 3]) == 'osd.2 backfillfull, osd.3 full'
    assert osds_filling_text(filling, [0, 4]) == ''
    # The rule not read: every filling OSD counts (the safe side).
    assert osds_filling_text(filling, None) == 'osd.1 nearfull, osd.2 backfillfull, osd.3 full'
