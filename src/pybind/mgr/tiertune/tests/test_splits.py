"""PGs a split left with invalid stats (splits.py): read only when a cache
pool is new or its pg_num moved, shown, held and raised while they last."""

import copy
import json

from conftest import restart
from tiertune.splits import (
    RECHECK_TICKS,
    SPLIT_SOURCE,
    PoolPgs,
    SplitWatch,
    pool_pgs,
    split_watch_from_store,
)

# The recording's ticks are about 3.3 s apart.
TICK_S = 3


def pg(pgid, invalid, state='active+clean'):
    # The fields of get('pg_stats') entries the watch reads (dump_pg_stats).
    return {'pgid': pgid, 'stats_invalid': invalid, 'state': state}


def cache_id(inputs):
    return next(int(p['pool']) for p in inputs['osd_map']['pools'] if p['tier_of'] >= 0)


def with_pg_stats(inputs, invalid, pg_num=None):
    """inputs with get('pg_stats') giving the cache pool `invalid` PGs with
    invalid stats (and a base PG, invalid too, that must not count)."""
    inputs = copy.deepcopy(inputs)
    cid = cache_id(inputs)
    cache = next(p for p in inputs['osd_map']['pools'] if p['tier_of'] >= 0)
    n = pg_num or cache['pg_num']
    cache.update(pg_num=n, pg_num_target=n, pg_num_pending=n, pg_placement_num=n,
                 pg_placement_num_target=n)
    base = cache['tier_of']
    inputs['pg_stats'] = {'pg_stats': [pg(f'{cid}.{i:x}', i < invalid) for i in range(n)]
                          + [pg(f'{base}.0', True)]}
    return inputs


def test_pgs_are_counted_per_pool():
    stats = {'pg_stats': [pg('5.0', True), pg('5.1a', True), pg('5.2', False),
                          pg('5.3', False, 'unknown'), pg('5.4', False, 'creating+peering'),
                          pg('12.0', True)]}
    assert pool_pgs(stats, {5, 7}) == {5: PoolPgs(invalid=2, listed=5, unreported=2),
                                       7: PoolPgs(0, 0, 0)}
    assert PoolPgs(0, 4, 0).settled(4)
    assert not PoolPgs(0, 2, 0).settled(4) and not PoolPgs(0, 4, 1).settled(4)


def tier_of(burst):
    from tiertune.topology import cache_tiers
    tiers = cache_tiers(burst['samples'][0]['inputs']['osd_map'])
    (pid,) = tiers
    return tiers, pid, tiers[pid].pg_num


def at_rest(tier, n):
    """The tier with n PGs, every count at its target."""
    import dataclasses
    return dataclasses.replace(tier, pg_num=n, pg_num_target=n, pg_num_pending=n, pgp_num=n,
                               pgp_num_target=n)


def valid(pid, n):
    return {'pg_stats': [pg(f'{pid}.{i:x}', False) for i in range(n)]}


def test_the_watch_reads_new_and_resized_pools_until_their_stats_are_valid(burst):
    import dataclasses
    tiers, pid, n = tier_of(burst)
    w = SplitWatch()
    assert w.observe(tiers) and w.watching == {pid} and w.due([pid], 0.0)
    # Only for pools looked at (warn or on).
    assert not w.due([], 0.0)
    stats = valid(pid, n)
    stats['pg_stats'][0]['stats_invalid'] = True
    assert not w.read(stats, tiers, 0.0, 30.0)
    assert w.invalid == {pid: 1}
    # Read again RECHECK_TICKS sleep intervals on, however many ticks come between.
    assert not w.due([pid], RECHECK_TICKS * 30.0 - 1)
    assert w.due([pid], RECHECK_TICKS * 30.0)
    assert w.read(valid(pid, n), tiers, 120.0, 30.0)
    assert w.invalid == {} and w.watching == set() and not w.due([pid], 1e9)
    # The same pg_num again is nothing to read; another is, at once.
    assert not w.observe(tiers) and not w.due([pid], 1e9)
    split = {pid: at_rest(tiers[pid], 2 * n)}
    assert w.observe(split) and w.due([pid], 121.0)
    # A count change in progress keeps the pool watched, valid stats or not.
    moving = {pid: dataclasses.replace(split[pid], pgp_num_target=4 * n)}
    w.read(valid(pid, 2 * n), moving, 121.0, 30.0)
    assert w.watching == {pid}
    # A pool gone is forgotten.
    assert w.observe({}) and w.pg_num_seen == {} and w.watching == set()


def test_a_read_before_the_split_pgs_are_reported_keeps_the_pool_watched(burst):
    """Just after a split the mgr's PG map may still list the parents'
    valid stats and the children as unknown, or not at all: that is no
    settled pool."""
    tiers, pid, n = tier_of(burst)
    split = {pid: at_rest(tiers[pid], 2 * n)}
    w = SplitWatch()
    w.observe(split)
    early = valid(pid, n)
    w.read(early, split, 0.0, 30.0)
    assert w.watching == {pid} and w.invalid == {}
    early['pg_stats'] += [pg(f'{pid}.{i:x}', False, 'unknown') for i in range(n, 2 * n)]
    w.read(early, split, 120.0, 30.0)
    assert w.watching == {pid}
    # Then the children report, invalid: held and raised as they should be.
    w.read({'pg_stats': [pg(f'{pid}.{i:x}', True) for i in range(2 * n)]}, split, 240.0, 30.0)
    assert w.invalid == {pid: 2 * n}
    w.read(valid(pid, 2 * n), split, 360.0, 30.0)
    assert w.watching == set() and w.invalid == {}


def test_the_stored_watch_round_trips_and_a_bad_one_starts_afresh():
    w = SplitWatch({5: 32, 7: 8}, {5}, {5: 3}, next_read={5: 100.0})
    back, problems = split_watch_from_store(w.to_store())
    assert problems == [] and back.pg_num_seen == {5: 32, 7: 8} and back.watching == {5}
    # Counts are not stored: the new mgr reads them on its first tick.
    assert back.invalid == {} and back.due([5], 0.0)
    fresh, problems = split_watch_from_store('{"pg_num": {"5": "x"}}')
    assert fresh.pg_num_seen == {} and problems and problems[0].startswith(
        'stored split watch not used: ValueError')
    assert split_watch_from_store(None) == (SplitWatch(), [])


def test_a_split_left_unscrubbed_is_held_shown_and_raised_until_scrubbed(burst, make_module):
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = make_module(with_pg_stats(recs[0]['inputs'], 0))
    m.sleep_interval = TICK_S
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert get.asked.count('pg_stats') == 1 and 'TIERTUNE_SPLIT_UNSCRUBBED' not in m.health
    # Steady ticks read no PG.
    for rec in recs[1:4]:
        get.inputs = with_pg_stats(rec['inputs'], 0)
        m.tick(rec['mono'], rec['wall'])
    assert get.asked.count('pg_stats') == 1
    # Split: a new pg_num in the OSD map, its PGs' stats invalid.
    n = 2 * m._tiers[cache_id(get.inputs)].pg_num
    rec = recs[4]
    get.inputs = with_pg_stats(rec['inputs'], n - 1, pg_num=n)
    m.notify('osd_map', '')
    m.tick(rec['mono'], rec['wall'])
    assert get.asked.count('pg_stats') == 2
    due = rec['mono'] + RECHECK_TICKS * TICK_S
    (detail,) = m.health['TIERTUNE_SPLIT_UNSCRUBBED']['detail']
    assert detail.startswith(f'pool {pool}: {n - 1} of its PGs have had no scrub since a PG split')
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['invalid_stats_pgs'] == n - 1 and row['decision']['action'] == 'hold'
    assert row['decision']['reasons'][0].startswith(f'{n - 1} of its PGs have had no scrub')
    # eval says the same (it reads the OSD map now, the counts as last read).
    now = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert now['decision']['action'] == 'hold'
    assert now['decision']['reasons'][0].startswith(f'{n - 1} of its PGs')
    # Stored, so that a new mgr goes on watching.
    assert json.loads(m.get_store('splits'))['watching'] == [cache_id(get.inputs)]
    # Scrubbed: the next read (RECHECK_TICKS sleep intervals on) clears it all.
    for rec in recs[5:5 + RECHECK_TICKS]:
        get.inputs = with_pg_stats(rec['inputs'], 0, pg_num=n)
        m.tick(rec['mono'], rec['wall'])
        assert get.asked.count('pg_stats') == (2 if rec['mono'] < due else 3)
    assert get.asked.count('pg_stats') == 3
    assert 'TIERTUNE_SPLIT_UNSCRUBBED' not in m.health
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['invalid_stats_pgs'] == 0
    assert not any('scrub' in r for r in row['decision']['reasons'])
    assert json.loads(m.get_store('splits'))['watching'] == []


def test_a_new_mgr_goes_on_watching_a_split_and_reads_no_pool_it_has_seen(burst, make_module):
    recs = burst['samples']
    m, get = make_module(with_pg_stats(recs[0]['inputs'], 3))
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert 'TIERTUNE_SPLIT_UNSCRUBBED' in m.health
    m2 = restart(get, sleep_interval=TICK_S)
    m2.tick(recs[1]['mono'], recs[1]['wall'])
    assert get.asked.count('pg_stats') == 2 and 'TIERTUNE_SPLIT_UNSCRUBBED' in m2.health
    # Once valid, a later mgr reads nothing: it has seen this pg_num.
    get.inputs = with_pg_stats(recs[2]['inputs'], 0)
    for rec in recs[2:2 + RECHECK_TICKS]:
        m2.tick(rec['mono'], rec['wall'])
    assert get.asked.count('pg_stats') == 3 and 'TIERTUNE_SPLIT_UNSCRUBBED' not in m2.health
    m3 = restart(get, sleep_interval=TICK_S)
    m3.tick(recs[6]['mono'], recs[6]['wall'])
    assert get.asked.count('pg_stats') == 3


def test_a_failed_read_of_the_pgs_fails_no_tick_and_is_tried_again(burst, make_module):
    recs = burst['samples']
    m, get = make_module(copy.deepcopy(recs[0]['inputs']))
    m.sleep_interval = TICK_S
    get.inputs['pg_stats'] = {'pg_stats': [{'stats_invalid': True}]}    # no pgid
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert m._failed_ticks == 0 and m._splits.watching
    assert m._book.get(cache_id(get.inputs)) is not None
    due = recs[0]['mono'] + RECHECK_TICKS * TICK_S
    for rec in recs[1:1 + RECHECK_TICKS]:
        get.inputs = with_pg_stats(rec['inputs'], 2)
        m.tick(rec['mono'], rec['wall'])
        assert get.asked.count('pg_stats') == (1 if rec['mono'] < due else 2)
    assert get.asked.count('pg_stats') == 2 and 'TIERTUNE_SPLIT_UNSCRUBBED' in m.health


def test_a_pool_in_off_mode_is_not_read(burst, make_module):
    recs = burst['samples']
    m, get = make_module(with_pg_stats(recs[0]['inputs'], 3))
    assert m._cmd_mode('off').retval == 0
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert get.asked.count('pg_stats') == 0
    # Looked at again: read at once (it was never read).
    assert m._cmd_mode('warn').retval == 0
    m.tick(recs[1]['mono'], recs[1]['wall'])
    assert get.asked.count('pg_stats') == 1 and 'TIERTUNE_SPLIT_UNSCRUBBED' in m.health


def test_no_read_while_the_pg_count_moves_and_one_when_it_stops(burst, make_module):
    recs = burst['samples']
    inputs = with_pg_stats(recs[0]['inputs'], 0)
    m, get = make_module(inputs)
    m.sleep_interval = TICK_S
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert get.asked.count('pg_stats') == 1
    # `pg_num 2n`: pg_num is there at once (watched from then on), and
    # the mgr walks pgp_num for a long while.
    n = next(p for p in inputs['osd_map']['pools'] if p['tier_of'] >= 0)['pg_num']
    for k, rec in enumerate(recs[1:8]):
        get.inputs = with_pg_stats(rec['inputs'], 2 * n, pg_num=2 * n)
        cache = next(p for p in get.inputs['osd_map']['pools'] if p['tier_of'] >= 0)
        cache.update(pg_placement_num=n + k)
        m.notify('osd_map', '')
        m.tick(rec['mono'], rec['wall'])
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['decision']['action'] == 'hold' and any(
        r.startswith('its PG count is changing') for r in row['decision']['reasons'])
    assert get.asked.count('pg_stats') == 1
    # Done, its PGs invalid: read at once, held and raised.
    rec = recs[8]
    get.inputs = with_pg_stats(rec['inputs'], 2 * n, pg_num=2 * n)
    m.notify('osd_map', '')
    m.tick(rec['mono'], rec['wall'])
    assert get.asked.count('pg_stats') == 2 and 'TIERTUNE_SPLIT_UNSCRUBBED' in m.health


def test_one_pools_pg_moves_neither_hurry_nor_delay_anothers_reads(burst):
    """Q waits for a scrub (read every RECHECK_TICKS intervals); P merges a
    PG at a time (Pacific's way), then rests: Q is read no more often for
    P's steps, P at once when it rests, and the store is written when P's
    move starts and ends, not at each step."""
    import dataclasses
    tiers, q, n = tier_of(burst)
    p = q + 100
    tq = at_rest(tiers[q], n)
    tp = dataclasses.replace(tq, pool_id=p, pool='other')
    w = SplitWatch()
    w.observe({q: tq, p: tp})
    stats = {'pg_stats': [pg(f'{q}.{i:x}', True) for i in range(n)]
             + valid(p, n)['pg_stats']}
    w.read(stats, {q: tq, p: tp}, 0.0, 30.0)
    assert w.watching == {q} and w.invalid == {q: n}
    stored = []
    for k, t in enumerate((10.0, 20.0, 30.0, 40.0)):
        moving = dataclasses.replace(tp, pg_num=n - k - 1, pg_num_target=n - 5,
                                     pg_num_pending=n - k - 1, pgp_num=n - k - 1,
                                     pgp_num_target=n - 5)
        stored.append(w.observe({q: tq, p: moving}))
        # p is moving: not looked at; q's read is not due before 120 s.
        assert not w.due([q], t)
    assert stored == [True, False, False, False]
    assert w.observe({q: tq, p: at_rest(tp, n - 5)})
    assert w.due([q, p], 60.0) and not w.due([q], 60.0)
    assert w.due([q], 120.0)


def _set_options(m, **opts):
    m._ceph_get_module_option = lambda mod, key, *a: opts.get(key)
    m.config_notify()


def test_a_lowered_sleep_interval_brings_the_next_read_after_a_split_in(burst, make_module):
    """Read under sleep_interval 3600, the next read was due 4 h on;
    lowered to 3 s and the PGs scrubbed, the pool stayed unread, held and
    warned of for those 4 h (a review helper)."""
    recs = burst['samples']
    m, get = make_module(with_pg_stats(recs[0]['inputs'], 3))
    _set_options(m, sleep_interval=3600)
    m.tick(recs[0]['mono'], recs[0]['wall'])
    assert 'TIERTUNE_SPLIT_UNSCRUBBED' in m.health
    _set_options(m, sleep_interval=3)
    for rec in recs[1:]:                    # 53 s of 3 s ticks: 4 x 3 s is 12 s
        get.inputs = with_pg_stats(rec['inputs'], 0)
        m.tick(rec['mono'], rec['wall'])
    assert get.asked.count(SPLIT_SOURCE) == 2
    assert 'TIERTUNE_SPLIT_UNSCRUBBED' not in m.health


def test_a_woken_tick_at_sleep_interval_1_keeps_no_sample_without_rates(burst, make_module):
    """Half a sleep_interval of 1 is 0.5 s, under the 1 s a rate needs."""
    recs = burst['samples']
    m, get = make_module(recs[0]['inputs'])
    _set_options(m, sleep_interval=1)
    for rec in recs[:8]:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    get.inputs = recs[8]['inputs']
    m.tick(recs[7]['mono'] + 0.7, recs[7]['wall'] + 0.7, woken=True)
    hist = m._book.get(cache_id(get.inputs))
    assert hist.latest.sample.mono == recs[7]['mono'] and hist.latest.rates is not None
