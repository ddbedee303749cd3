"""The mgr glue, on the real Module class with recorded mgr data (the C++
side of ceph-mgr is a stub: see conftest)."""

import copy
import dataclasses
import errno
import json
import math
import time

import pytest
from mgr_module import NotifyType

from conftest import force_change, restart, samples_by_phase
from tiertune.report import COLUMNS
from tiertune.sampling import TICK_SOURCES
from tiertune.splits import SPLIT_SOURCE
from tiertune.state import ratios_from_dict

O_PG_SOURCES = {'pg_dump', 'pg_stats', 'pg_summary', 'pg_progress'}


def run_ticks(make_module, recs):
    m, get = make_module(recs[0]['inputs'])
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    return m, get


def test_a_steady_tick_never_asks_for_per_pg_data(burst, make_module):
    """Per-PG data only on the tick that first sees the tier (its PGs may
    have invalid stats from a split: see splits), never after."""
    m, get = run_ticks(make_module, burst['samples'][:1])
    assert get.asked.count(SPLIT_SOURCE) == 1
    get.asked.clear()
    for rec in burst['samples'][1:]:
        get.inputs = rec['inputs']
        # An OSD map each tick too (the same pg_num): still no PG read.
        m.notify(NotifyType.osd_map, '')
        m.tick(rec['mono'], rec['wall'])
    assert get.asked, 'the tick read nothing'
    assert set(get.asked) <= set(TICK_SOURCES)
    assert not O_PG_SOURCES & set(get.asked)


def test_osd_map_is_read_again_only_after_a_notification(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:3])
    assert get.asked.count('osd_map') == 1
    assert get.asked.count('pool_stats') == 3
    m.notify(NotifyType.osd_map, '')
    m.tick()
    assert get.asked.count('osd_map') == 2
    m.notify(NotifyType.pg_summary, '')   # not ours to care about
    m.tick()
    assert get.asked.count('osd_map') == 2


def test_status_json_has_every_field(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'])
    r = m._cmd_status(format='json')
    assert r.retval == 0
    (row,) = json.loads(r.stdout)['pools']
    spec = burst['spec']
    assert row['pool'] == spec['cache_pool'] and row['base_pool'] == spec['base_pool']
    assert row['cache_mode'] == 'writeback'
    assert row['target_max_bytes'] == spec['target_max_bytes']
    assert row['ratios'] == {'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8}
    assert 0 < row['dirty'] < row['fill'] < 1
    assert row['bytes']['dirty'] > 0 and row['objects']['dirty'] > 0
    assert set(row['rates']) >= {'flush_bytes_sec', 'evict_bytes_sec', 'promote_ops_sec',
                                 'read_bytes_sec', 'write_bytes_sec', 'read_ops_sec',
                                 'write_ops_sec', 'proxied_read_bytes_sec',
                                 'proxied_write_bytes_sec', 'proxied_read_ops_sec',
                                 'proxied_write_ops_sec'}
    assert row['rates']['proxied_write_bytes_sec'] is not None
    assert set(row['agent_pgs']) == {'pg_num', 'flush_high', 'flush_low', 'evict_some',
                                     'evict_full'}
    assert row['hit_set']['type'] == 'bloom'
    assert row['hit_set']['period_s'] == spec['hit_set_period']
    assert row['promote'] == {'min_read_recency': spec['min_read_recency_for_promote'],
                              'min_write_recency': spec['min_write_recency_for_promote']}
    assert row['samples'] == len(burst['samples'])
    assert row['sample_age_s'] is not None and row['sample_age_s'] >= 0
    assert row['error'] is None


def test_status_reports_what_the_ticks_cost(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    assert json.loads(m._cmd_status(format='json').stdout)['tick'] is None
    m, get = run_ticks(make_module, burst['samples'][:5])
    tick = json.loads(m._cmd_status(format='json').stdout)['tick']
    assert tick['ticks'] == 5 and tick['cache_pools'] == 1
    assert 0 < tick['cpu_ms_last'] <= tick['cpu_ms_max']
    assert tick['cpu_ms_median'] <= tick['cpu_ms_max'] and tick['wall_ms_last'] > 0
    parts = tick['cpu_ms_median_parts']
    # pg_stats: the first tick read the new tier's PGs (see splits).
    assert set(parts) == {'pg_stats', 'pool_stats', 'history', 'models_and_law', 'changes',
                          'health_progress', 'store'}
    assert all(v >= 0 for v in parts.values()) and parts['models_and_law'] > 0
    assert sum(parts.values()) <= 5 * tick['cpu_ms_max']
    assert m._cmd_status().stdout.splitlines()[-1].startswith('last tick: ')


def test_a_failed_tick_is_counted_too(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    def fail(*args, **kwargs):
        raise RuntimeError('any error inside the tick')
    m._tuner.decide = fail
    with pytest.raises(RuntimeError):
        m.tick()
    tick = json.loads(m._cmd_status(format='json').stdout)['tick']
    assert tick['ticks'] == 1
    # It failed in the models: the steps before it were counted (pg_stats:
    # the tier is new, see splits).
    assert set(tick['cpu_ms_median_parts']) == {'pg_stats', 'pool_stats', 'history'}


def test_status_before_the_first_tick_shows_settings_without_levels(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['samples'] == 0 and row['fill'] is None and row['rates'] is None
    assert row['ratios']['dirty'] == 0.4


def test_status_plain_is_an_aligned_table(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'])
    out = m._cmd_status().stdout
    header, row, tick = out.rstrip('\n').split('\n')
    assert tick.startswith('last tick: ')
    assert header.split('  ')[0] == 'POOL'
    for col in COLUMNS:
        assert col in header
    # each column starts at the same offset in the header and the row
    assert row.startswith(burst['spec']['cache_pool'])
    assert row.index(burst['spec']['base_pool']) == header.index('BASE')
    assert row.index('writeback') == header.index('MODE')


def test_status_plain_fill_and_dirty_are_the_levels_rounded_once(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'])
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    target = burst['spec']['target_max_bytes']
    fill, dirty = row['bytes']['user'] / target, row['bytes']['dirty'] / target
    assert row['fill'] == pytest.approx(fill, abs=1e-6)
    assert row['dirty'] == pytest.approx(dirty, abs=1e-6)
    header, line = m._cmd_status().stdout.split('\n')[:2]
    cells = line.split()
    # The recorded burst's last sample is 0.652532 full: once rounded,
    # 65.3% (rounded to 4 places first, the table said 65.2%).
    assert f'{fill * 100:.1f}%' == '65.3%'
    assert f'{fill * 100:.1f}%' in cells and f'{dirty * 100:.1f}%' in cells


def _table_cell(m, column):
    header, line = m._cmd_status().stdout.split('\n')[:2]
    start = header.index(column)
    return line[start:].split('  ')[0]


def test_status_plain_says_what_the_last_tick_decided(burst, make_module, monkeypatch):
    """NEW D/H/F alone did not say whether the ratios were held, changed or
    only warned of: that was in the JSON only."""
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    # The recorded burst is too short to fit a model on: held.
    assert _table_cell(m, 'ACTION') == 'hold'
    from tiertune.topology import Ratios
    force_change(monkeypatch, Ratios(0.2, 0.6, 0.8))
    m._pool_set = lambda pid, p, var, val: None
    last = burst['samples'][-1]
    m.tick(last['mono'] + 30, last['wall'] + 30)
    assert _table_cell(m, 'ACTION') == 'would change'     # warn: nothing sent
    assert m._cmd_mode(pool, 'on').retval == 0
    m.tick(last['mono'] + 60, last['wall'] + 60)
    assert _table_cell(m, 'ACTION') == 'change'
    assert m._cmd_mode(pool, 'off').retval == 0
    assert _table_cell(m, 'ACTION') == '-'


def test_status_plain_says_under_the_table_why_a_pool_was_set_to_warn(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:3])
    (pid,) = m._tiers
    pool = burst['spec']['cache_pool']
    assert 'outside tiertune' not in m._cmd_status().stdout
    m._tuner.settings.pool(pid).manual_change = 'ratios changed outside tiertune to x'
    m._tuner.settings.pool(pid).mode = 'warn'     # as a hand change leaves it
    lines = m._cmd_status().stdout.splitlines()
    assert (f'pool {pool}: ratios changed outside tiertune to x: `ceph tiertune mode {pool} '
            f'on` resumes') in lines
    # renamed since: the command names the pool as it is now (a review
    # helper: stored with the note, it named one that no longer exists)
    get.inputs = copy.deepcopy(get.inputs)
    (tier,) = [p for p in get.inputs['osd_map']['pools'] if p['pool'] == pid]
    tier['pool_name'] = 'hot'
    m.notify(NotifyType.osd_map, '')
    m.tick()
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['autotune']['manual_change'].endswith('`ceph tiertune mode hot on` resumes')
    assert m._cmd_mode('hot', 'off').retval == 0   # the note would contradict AUTOTUNE
    assert 'outside tiertune' not in m._cmd_status().stdout
    # off shows no decision at once, not the last tick's until the next
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['decision'] is None and row['recommended'] is None and row['model'] is None


def test_times_shown_carry_the_mgr_hosts_offset_from_utc():
    """The CLI is often on another host, in another zone."""
    import re

    from tiertune.report import fmt_wall
    assert re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}', fmt_wall(1.8e9))


def with_a_second_tier(inputs):
    """The inputs with a copy of the recorded tier: pools 'base-b' (12)
    and 'cache-b' (13)."""
    inputs = copy.deepcopy(inputs)
    pools, stats = inputs['osd_map']['pools'], inputs['pool_stats']['pool_stats']
    new_id = {2: 12, 3: 13}
    for p in list(pools):
        q = copy.deepcopy(p)
        q['pool'], q['pool_name'] = new_id[p['pool']], p['pool_name'] + '-b'
        q['tier_of'] = new_id.get(p['tier_of'], -1)
        q['tiers'] = [new_id[t] for t in p['tiers']]
        q['read_tier'] = new_id.get(p['read_tier'], -1)
        q['write_tier'] = new_id.get(p['write_tier'], -1)
        pools.append(q)
    for e in list(stats):
        if e['poolid'] in new_id:
            stats.append({**copy.deepcopy(e), 'poolid': new_id[e['poolid']]})
    return inputs


def test_status_of_one_pool(burst, make_module):
    m, get = make_module(with_a_second_tier(burst['samples'][0]['inputs']))
    for rec in burst['samples']:
        get.inputs = with_a_second_tier(rec['inputs'])
        m.tick(rec['mono'], rec['wall'])
    assert {p['pool'] for p in json.loads(m._cmd_status(format='json').stdout)['pools']} == {
        'cache', 'cache-b'}
    for pool in ('cache', 'cache-b'):
        r = m._cmd_status(pool=pool, format='json-pretty')
        assert r.retval == 0
        assert [p['pool'] for p in json.loads(r.stdout)['pools']] == [pool]
        plain = m._cmd_status(pool=pool).stdout.splitlines()
        assert [line.split()[0] for line in plain[1:-1]] == [pool]


def test_unknown_pool_is_enoent_naming_it(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:1])
    r = m._cmd_status(pool='nosuchpool')
    assert r.retval == -errno.ENOENT and 'nosuchpool' in r.stderr


def test_pool_that_is_not_a_cache_tier_is_einval(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:1])
    r = m._cmd_status(pool=burst['spec']['base_pool'])
    assert r.retval == -errno.EINVAL and 'not a cache tier' in r.stderr


def test_bad_format_is_einval(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:1])
    assert m._cmd_status(format='xml').retval == -errno.EINVAL
    assert m._cmd_dump_inputs(format='plain').retval == -errno.EINVAL
    pretty = m._cmd_dump_inputs(format='json-pretty').stdout
    assert json.loads(pretty) == json.loads(m._cmd_dump_inputs().stdout) and '\n    ' in pretty


def test_no_cache_pools(burst, make_module):
    inputs = copy.deepcopy(burst['samples'][0]['inputs'])
    inputs['osd_map']['pools'] = [p for p in inputs['osd_map']['pools'] if p['tier_of'] < 0]
    m, get = make_module(inputs)
    m.tick()
    r = m._cmd_status()
    assert (r.retval, r.stdout) == (0, 'no cache tier pools\n')
    out = json.loads(m._cmd_status(format='json').stdout)
    assert (out['mode'], out['pools'], out['tick']['cache_pools']) == ('warn', [], 0)
    assert get.asked.count('pool_stats') == 0   # nothing to sample


def test_a_failing_tick_does_not_end_serve(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    calls = []

    def bad_tick(**kwargs):
        calls.append(kwargs)
        if len(calls) >= 2:
            m._shutdown.set()
        m._wake.set()   # no sleep_interval to wait out
        raise RuntimeError('boom')
    m.tick = bad_tick
    m.serve()
    assert calls == [{'woken': False}, {'woken': True}]    # the second: woken, not timed


def test_a_tick_a_command_wakes_soon_after_a_sample_takes_none(burst, make_module):
    # Its interval would span fewer OSD stats reports than a tick's, and
    # its sample would take a place in the bounded history.
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:4])
    m.sleep_interval = 30
    (pid,) = m._tiers
    last = recs[3]
    n, old = len(m._book.get(pid)), m._tuner.views[pid]
    m.tick(last['mono'] + 14, last['wall'] + 14, woken=True)
    assert len(m._book.get(pid)) == n
    assert m._tuner.views[pid] is not old                   # it decided all the same
    m.tick(last['mono'] + 15, last['wall'] + 15, woken=True)  # half an interval
    assert len(m._book.get(pid)) == n + 1
    m.tick(last['mono'] + 16, last['wall'] + 16)             # a timed tick always samples
    assert len(m._book.get(pid)) == n + 2


def test_a_failed_tick_reads_the_osd_map_again(burst, make_module):
    # The map it read and never acted on (a target, an overlay changed).
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    m.notify(NotifyType.osd_map, '')
    real = get.inputs
    get.inputs = {'osd_map': real['osd_map']}       # pool_stats unreadable
    with pytest.raises(KeyError):
        m.tick(recs[2]['mono'], recs[2]['wall'])
    assert m._osdmap_changed.is_set()


def _unreported(inputs):
    """inputs as a new active mgr has them before any OSD reported: every
    PG's stats zero (its pool_stats still list the pools)."""
    out = copy.deepcopy(inputs)
    for e in out['pool_stats']['pool_stats']:
        e['stat_sum'] = {k: 0 for k in e['stat_sum']}
        e['up'] = e['acting'] = 0
    out['pg_ready'] = {'pg_ready': False}
    return out


def test_no_sample_is_taken_until_every_osd_has_reported_to_this_mgr(burst, make_module):
    # A mgr with no stored samples (down longer than the history's window)
    # takes over mid-way: its first stats read zero.  Begun from them, the
    # history would read the pool's whole past IO as one interval's.
    recs = burst['samples'][10:]
    m, get = make_module(recs[0]['inputs'])
    get.inputs = _unreported(recs[0]['inputs'])
    m.tick(recs[0]['mono'], recs[0]['wall'])
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['samples'] == 0 and 'no sample yet' in row['decision']['reasons']
    for rec in recs[1:3]:       # reported: the stub's pg_ready is True
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    (pid,) = m._tiers
    first, second = m._book.get(pid).entries
    assert first.sample.wall == recs[1]['wall'] and first.rates is None
    assert second.rates is not None
    # A flag the mgr never clears while active: asked until it was set.
    assert get.asked.count('pg_ready') == 2


def test_a_woken_tick_samples_a_tier_it_has_no_sample_of(burst, make_module):
    # `mode <new tier> on` right after the tier is made: its first sample
    # is not put off a whole sleep_interval.
    recs = burst['samples']
    m, get = make_module(recs[0]['inputs'])
    m.sleep_interval = 30
    m.tick(recs[0]['mono'], recs[0]['wall'], woken=True)
    (pid,) = m._tiers
    assert len(m._book.get(pid)) == 1


def _without_overlay(inputs):
    out = copy.deepcopy(inputs)
    for p in out['osd_map']['pools']:
        if p['tier_of'] < 0:
            p['read_tier'] = p['write_tier'] = -1
    return out


def test_a_tiers_samples_start_again_when_its_overlay_goes_or_comes(burst, make_module):
    # On one side the base's counters are the tier's proxied IO, on the
    # other its clients' own: one history must not mix them.
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:5])
    (pid,) = m._tiers
    assert len(m._book.get(pid)) == 5
    get.inputs = _without_overlay(recs[5]['inputs'])
    m.notify(NotifyType.osd_map, '')
    # Woken by a command, soon after the last sample: the history goes
    # first, so the tick's sample is the new history's first.
    m.tick(recs[5]['mono'], recs[5]['wall'], woken=True)
    assert len(m._book.get(pid)) == 1
    view = m._tuner.views[pid]
    assert any(r.startswith('no overlay: pool ') for r in view.decision.reasons)
    assert view.model.promote.limiter == 'unknown'
    assert 'no overlay' in view.model.promote.detail
    m.tick(recs[6]['mono'], recs[6]['wall'])
    assert len(m._book.get(pid)) == 2
    get.inputs = recs[7]['inputs']
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[7]['mono'], recs[7]['wall'])
    assert len(m._book.get(pid)) == 1
    assert not any(r.startswith('no overlay') for r in m._tuner.views[pid].decision.reasons)
    # Stored again at once (not samples_save_interval later): a restart
    # would otherwise bring back the samples from across the change.
    from tiertune import sample_store
    from tiertune.module import SAMPLES_PREFIX
    stored = m.get_store(f'{SAMPLES_PREFIX}{pid}')
    assert len(sample_store.decode(stored, recs[7]['mono'], recs[7]['wall'], 1e9)[0]) == 1


def test_every_option_with_a_minimum_has_a_maximum():
    # Pacific's monitor enforces a module option's bounds only when both
    # are declared: a lone min lets `ceph config set` store anything.
    from tiertune.options import OPTIONS
    for o in OPTIONS:
        assert ('min' in o) == ('max' in o), o['name']


@pytest.mark.parametrize('stored, used', [(0, 1), (0.0, 1), (-5, 1), (10 ** 9, 86400), (7, 7),
                                          (30.0, 30)])
def test_a_sleep_interval_the_monitor_did_not_check_is_clamped(burst, make_module, stored,
                                                                used):
    # A value stored before the option had a maximum is not held to the
    # bounds by the monitor: 0 would spin the loop.
    m, get = make_module(burst['samples'][0]['inputs'])
    m._ceph_get_module_option = lambda mod, key, *a: stored if key == 'sleep_interval' else None
    m._read_options()
    assert m.sleep_interval == used


def test_every_option_is_held_to_its_declared_bounds(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    stored = {'samples_save_interval': -5, 'history_size': 1}
    m._ceph_get_module_option = lambda mod, key, *a: stored.get(key)
    m._read_options()
    assert (m.samples_save_interval, m.history_size) == (0, 2)


def test_only_a_change_to_tiertunes_own_options_wakes_the_loop(burst, make_module):
    # The mgr notifies every module of every config change: another
    # module's option must not cost a tick.
    m, get = make_module(burst['samples'][0]['inputs'])
    m._wake.clear()
    m.config_notify()
    assert not m._wake.is_set()
    m._ceph_get_module_option = lambda mod, key, *a: 10 if key == 'sleep_interval' else None
    m.config_notify()
    assert m._wake.is_set() and m.sleep_interval == 10


def test_an_option_value_the_mgr_cannot_convert_keeps_the_last_one(burst, make_module):
    # `config set --force` skips the mon's check, and the mgr raises
    # converting the text: serve must not end on it.
    m, get = make_module(burst['samples'][0]['inputs'])

    def unconvertible(mod, key, *a):
        if key == 'sleep_interval':
            raise ValueError("invalid literal for int() with base 10: 'soon'")
        return 50 if key == 'history_size' else None

    m._ceph_get_module_option = unconvertible
    m.config_notify()
    assert (m.sleep_interval, m.history_size) == (30, 50)
    # a float the mgr reads, that no int holds
    m._ceph_get_module_option = lambda mod, key, *a: float('inf') if key == 'sleep_interval' \
        else None
    m.config_notify()
    assert m.sleep_interval == 30


def test_an_unusable_option_is_warned_of_once_per_value_not_per_config_change(
        burst, make_module):
    """The mgr calls config_notify on every config change of the cluster:
    the same warning each time filled the mgr log."""
    m, get = make_module(burst['samples'][0]['inputs'])
    warned = []
    m.log.warning = lambda fmt, *a: warned.append(fmt % a)
    value = [0]
    m._ceph_get_module_option = lambda mod, key, *a: value[0] if key == 'sleep_interval' \
        else None
    for _ in range(5):
        m.config_notify()
    assert warned == ['sleep_interval 0 is outside its bounds: using 1']
    value[0] = -3
    m.config_notify()
    assert len(warned) == 2 and '-3' in warned[1]
    value[0] = 7            # fixed: no warning; the old one may come back
    m.config_notify()
    value[0] = -3
    m.config_notify()
    assert len(warned) == 3 and m.sleep_interval == 1


def test_history_size_option_resizes(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'])
    m._ceph_get_module_option = lambda mod, key, *a: 3 if key == 'history_size' else None
    m.config_notify()
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['samples'] == 3


def test_dump_inputs_is_the_raw_tick_data(burst, make_module):
    rec = samples_by_phase(burst, 'drain')[-1]
    m, get = make_module(rec['inputs'])
    out = json.loads(m._cmd_dump_inputs().stdout)
    assert out['pool_stats'] == rec['inputs']['pool_stats']
    assert out['osd_map']['pools'] == rec['inputs']['osd_map']['pools']
    assert out['pg_ready'] == {'pg_ready': True}
    # The cache pool's PGs as the split watch reads them (the stub: every
    # PG reported and valid); the base pool's are left out.
    cid = next(int(p['pool']) for p in rec['inputs']['osd_map']['pools'] if p['tier_of'] >= 0)
    pgs = out['pg_stats']['pg_stats']
    assert len(pgs) == burst['spec']['cache_pg_num'] and all(
        set(pg) == {'pgid', 'state', 'stats_invalid'} and pg['pgid'].startswith(f'{cid}.')
        for pg in pgs)


def test_commands_parse_as_pacific_declares_them():
    # The 16.2.15 CLI decorator turns annotations into argument descriptors;
    # an annotation it does not know (e.g. `str | None`) makes the mgr refuse
    # the whole module at enable time ("cannot run on the active manager").
    from mgr_module import CLICommand
    cmds = {k: v for k, v in CLICommand.COMMANDS.items() if k.startswith('tiertune ')}
    assert cmds['tiertune status'].args == \
        'name=pool,req=false,type=CephString name=format,req=false,type=CephString'
    assert cmds['tiertune status'].perm == 'r'
    assert cmds['tiertune dump-inputs'].args == 'name=format,req=false,type=CephString'
    for cmd in cmds.values():
        assert 'type=' in cmd.args or not cmd.args
        cmd.dump_cmd()


def test_settings_and_history_survive_a_restart(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    assert m._cmd_mode(pool, 'on').retval == 0
    assert m._cmd_mode('off').retval == 0
    assert m._cmd_set(pool, 'dirty_ratio_min', 0.2).retval == 0
    assert m._cmd_set(pool, 'horizon_s', 900.0).retval == 0
    pid = next(iter(m._tiers))
    m._tuner.settings.pool(pid).last_change_wall = 42.0
    m._save_settings_locked()
    from tiertune.state import DecisionRecord
    from tiertune.topology import Ratios
    r = Ratios(0.4, 0.6, 0.8)
    m._tuner.history(pid).append(DecisionRecord(time=41.0, pool=pool, mode='on', old=r,
                                                new=Ratios(0.2, 0.6, 0.8), reason='a burst',
                                                result='applied'))
    m._save_history(pid)
    # a new Module on the same store: a mgr restart or failover
    from tiertune.module import Module
    m2 = Module('tiertune', None, None)
    m2.get = get
    m2._load()
    s = m2._tuner.settings
    assert s.mode == 'off' and s.pool(pid).mode == 'on'
    assert s.pool(pid).bounds.dirty_ratio_min == 0.2 and s.pool(pid).knobs.horizon_s == 900.0
    assert s.pool(pid).last_change_wall == 42.0
    assert list(m2._tuner.history(pid)) == list(m._tuner.history(pid))
    assert m2._cmd_history(pool).stdout == m._cmd_history(pool).stdout


def test_bad_set_changes_nothing(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    before = m._tuner.settings.to_json()
    for key, value in (('dirty_ratio_min', 1.5), ('dirty_ratio_min', 0.9), ('bogus', 0.1),
                       ('deadband', 0.01)):
        r = m._cmd_set(pool, key, value)
        assert r.retval == -errno.EINVAL and key in r.stderr
    assert m._cmd_set('nosuchpool', 'max_step', 0.2).retval == -errno.ENOENT
    assert m._cmd_set(burst['spec']['base_pool'], 'max_step', 0.2).retval == -errno.EINVAL
    assert m._tuner.settings.to_json() == before


def test_set_stores_the_decimal_typed_not_the_mgrs_parse_of_it(burst, make_module):
    # The 16.2.15 mgr parses `tiertune set cache full_ratio_min 0.6` as
    # 0.6000000000000001 (json_spirit), and 0.3 as 0.30000000000000004:
    # the reply, status and the store showed those.
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    pid = next(iter(m._tiers))
    for key, parsed, typed in (('full_ratio_min', 0.6000000000000001, 0.6),
                               ('dirty_high_ratio_min', 0.30000000000000004, 0.3),
                               ('horizon_s', 900.0000000000001, 900.0)):
        r = m._cmd_set(pool, key, parsed, format='json')
        assert r.retval == 0, r.stderr
        out = json.loads(r.stdout)
        assert {**out['bounds'], **out['knobs']}[key] == typed
        assert f'{key} = {typed}' in m._cmd_set(pool, key, parsed).stdout
    ps = m._tuner.settings.pool(pid)
    assert ps.bounds.full_ratio_min == 0.6 and ps.knobs.horizon_s == 900.0
    refused = m._cmd_set(pool, 'bogus', 0.30000000000000004)
    assert 'bogus=0.3 refused' in refused.stderr
    # Values an earlier version stored as the mgr parsed them read back typed.
    from tiertune.bounds import bounds_from_dict
    assert bounds_from_dict({'full_ratio_min': 0.7000000000000001}).full_ratio_min == 0.7
    from tiertune.bounds import as_typed
    assert as_typed(1.7976931348623157e308) == 1.7976931348623157e308     # not inf
    # A typed -0 is 0, not "-0.0" in the echo and the store (a review helper).
    assert m._cmd_set(pool, 'dirty_ratio_min', -0.0).stdout == f'{pool}: dirty_ratio_min = 0.0\n'
    assert '-0.0' not in m.get_store('state')


def test_mode_arguments(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    assert m._cmd_mode('sideways').retval == -errno.EINVAL
    assert m._cmd_mode(pool, 'sideways').retval == -errno.EINVAL
    assert m._cmd_mode('nosuchpool', 'on').retval == -errno.ENOENT
    assert m._cmd_mode('default').retval == -errno.EINVAL     # only a pool follows it
    out = json.loads(m._cmd_mode(pool, 'on', format='json').stdout)
    assert out == {'pool': pool, 'mode': 'on', 'pool_mode': 'on'}
    assert m._tuner.settings.mode == 'warn'


def test_a_pool_with_its_own_mode_is_named_and_can_follow_the_default_again(burst,
                                                                            make_module):
    # The default on, a pool set on by itself (as after a hand change sent
    # it to warn): `mode off` leaves it on, and says so; `mode <pool>
    # default` makes it follow the default.
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    assert m._cmd_mode('on').retval == 0
    assert m._cmd_mode(pool, 'on').retval == 0
    r = m._cmd_mode('off')
    assert r.retval == 0 and f'{pool} (on)' in r.stdout
    out = json.loads(m._cmd_mode('off', format='json').stdout)
    assert out == {'pool': None, 'mode': 'off',
                   'pools_with_own_mode': [{'pool': pool, 'mode': 'on'}]}
    assert m._tuner.settings.effective_mode(pid) == 'on'
    out = json.loads(m._cmd_mode(pool, 'default', format='json').stdout)
    assert out == {'pool': pool, 'mode': 'off', 'pool_mode': None}
    assert m._tuner.settings.pools[pid].mode is None
    assert m._tuner.settings.effective_mode(pid) == 'off'
    assert json.loads(m._cmd_mode('warn', format='json').stdout)['pools_with_own_mode'] == []
    # One whose own mode is the default's is named too: it keeps it later.
    assert m._cmd_mode(pool, 'warn').retval == 0
    out = json.loads(m._cmd_mode('warn', format='json').stdout)
    assert out['pools_with_own_mode'] == [{'pool': pool, 'mode': 'warn'}]


def test_following_a_default_of_on_takes_the_ratios_as_they_are(burst, make_module):
    # As `mode <pool> on` does: a hand change noticed before is not held
    # against the pool once the operator makes it follow a default of on.
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    assert m._cmd_mode('on').retval == 0
    ps = m._tuner.settings.pool(pid)
    ps.mode, ps.manual_change = 'warn', 'dirty_ratio changed outside tiertune'
    assert m._cmd_mode(pool, 'default').stdout == f'pool {pool} follows the default mode (on)\n'
    assert ps.mode is None and ps.manual_change is None and ps.last_applied is None


def test_eval_before_and_after_a_tick(burst, make_module):
    m, get = make_module(burst['samples'][0]['inputs'])
    pool = burst['spec']['cache_pool']
    assert m._cmd_eval(pool).retval == -errno.EAGAIN
    m, get = run_ticks(make_module, burst['samples'])
    out = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert out['decision']['action'] in ('change', 'hold', 'none')
    assert set(out['decision']['recommended']) == {'dirty', 'dirty_high', 'full'}
    assert 'fitted' in out['model']
    assert m._cmd_eval(pool).stdout.startswith(f'pool {pool} (mode warn)')


def _clock_at(monkeypatch, rec, later_s=0.0):
    """The module's clocks as at a recorded tick (plus later_s)."""
    monkeypatch.setattr(time, 'monotonic', lambda: rec['mono'] + later_s)
    monkeypatch.setattr(time, 'time', lambda: rec['wall'] + later_s)


def test_eval_at_the_ticks_moment_is_the_ticks_decision(burst, make_module, monkeypatch):
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tuner.views
    view = m._tuner.views[pid]
    _clock_at(monkeypatch, burst['samples'][-1])
    out = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert out['decision'] == json.loads(json.dumps(view.decision.as_dict()))
    assert out['model'] == json.loads(json.dumps(view.model.as_dict()))
    assert m._tuner.views[pid] is view     # eval keeps nothing


def test_eval_decides_on_the_osd_map_now_not_the_last_ticks(burst, make_module, monkeypatch):
    """A target removed since the last tick: eval holds for it at once (the
    tick's decision, made with the target, said nothing of it)."""
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tuner.views
    view = m._tuner.views[pid]
    assert not any('no target_max_bytes' in str(r) for r in view.decision.reasons)
    inputs = copy.deepcopy(burst['samples'][-1]['inputs'])
    for p in inputs['osd_map']['pools']:
        if p['pool_name'] == pool:
            p['target_max_bytes'] = 0
    get.inputs = inputs
    _clock_at(monkeypatch, burst['samples'][-1], later_s=1.0)
    out = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert out['decision']['action'] == 'hold'
    assert any(r.startswith('no target_max_bytes') for r in out['decision']['reasons'])
    assert m._tuner.views[pid] is view


def test_eval_answers_for_a_pool_in_off_mode(burst, make_module, monkeypatch):
    """off: the tick decides nothing for the pool (no view, nothing in
    status), but it is still sampled, and eval says what it would decide."""
    pool = burst['spec']['cache_pool']
    m, get = make_module(burst['samples'][0]['inputs'])
    assert m._cmd_mode('off').retval == 0
    for rec in burst['samples']:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    assert m._tuner.views == {}
    warn, _ = run_ticks(make_module, burst['samples'])
    _clock_at(monkeypatch, burst['samples'][-1])
    out = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert out['mode'] == 'off'
    assert out['model']['samples'] == len(burst['samples']) - 1    # every interval, sampled
    # What it would decide is what a pool in warn mode decides on the same samples.
    assert out == {**json.loads(warn._cmd_eval(pool, format='json').stdout), 'mode': 'off'}


def test_eval_says_a_pool_changed_by_hand_would_go_to_warn(burst, make_module, monkeypatch):
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tuner.views
    ps = m._tuner.settings.pool(pid)
    ps.mode = 'on'
    ps.last_applied = ratios_from_dict({'dirty': 0.3, 'dirty_high': 0.5, 'full': 0.7})
    sets = []
    monkeypatch.setattr(m, '_pool_set', lambda *args: sets.append(args))
    _clock_at(monkeypatch, burst['samples'][-1], later_s=1.0)
    out = json.loads(m._cmd_eval(pool, format='json').stdout)
    assert out['mode'] == 'warn'
    # The tick turns the pool to warn, not eval; and eval sets nothing.
    assert ps.mode == 'on' and ps.manual_change is None and sets == []


def without_targets(burst):
    """The burst's last inputs with no target on its cache pool."""
    inputs = copy.deepcopy(burst['samples'][-1]['inputs'])
    for p in inputs['osd_map']['pools']:
        if p['tier_of'] >= 0:
            p['target_max_bytes'] = 0
    return inputs


def test_health_is_set_from_the_tick(burst, make_module):
    m, get = make_module(without_targets(burst))
    m.tick()
    assert 'TIERTUNE_NO_TARGET' in m.health
    assert m._cmd_mode('off').retval == 0
    m.tick()
    assert m.health == {}


@pytest.mark.parametrize('cache_mode, blocks', [('writeback', True), ('readproxy', True),
                                               ('readonly', False), ('proxy', False)])
def test_no_target_says_writes_block_only_on_a_tier_that_takes_them(burst, make_module,
                                                                      cache_mode, blocks):
    """A readonly or proxy tier takes no client writes: 'writes block once
    it fills' was wrong there (a review helper)."""
    inputs = without_targets(burst)
    for p in inputs['osd_map']['pools']:
        if p['tier_of'] >= 0:
            p['cache_mode'] = cache_mode
    m, get = make_module(inputs)
    m.tick()
    (line,) = m.health['TIERTUNE_NO_TARGET']['detail']
    assert line.startswith(f'pool {burst["spec"]["cache_pool"]} has no target_max_bytes/objects')
    assert 'it grows until its OSDs fill' in line
    assert line.endswith(', where client writes block') == blocks


def test_ticks_failing_in_a_row_raise_a_health_check_until_one_runs(burst, make_module):
    """A loop that keeps failing (here pool_stats unreadable) says so in
    health after TICK_FAILURES_WARN ticks, keeps the checks of the last
    tick that ran, and clears once a tick runs again."""
    from tiertune.health import TICK_FAILURES_WARN
    m, get = make_module(without_targets(burst))
    m.tick()
    assert set(m.health) == {'TIERTUNE_NO_TARGET'}
    good = get.inputs
    get.inputs = {**good, 'pool_stats': {'pool_stats': [{'poolid': 'x'}]}}
    for n in range(1, TICK_FAILURES_WARN + 1):
        with pytest.raises(ValueError):
            m.tick()
        if n < TICK_FAILURES_WARN:
            assert set(m.health) == {'TIERTUNE_NO_TARGET'}, n
    assert set(m.health) == {'TIERTUNE_NO_TARGET', 'TIERTUNE_TICK_FAILED'}
    (detail,) = m.health['TIERTUNE_TICK_FAILED']['detail']
    summary = m.health['TIERTUNE_TICK_FAILED']['summary']
    assert 'ValueError' in detail and f'failed ({TICK_FAILURES_WARN})' in detail
    assert f'{TICK_FAILURES_WARN} or more ticks' in summary
    # One more failed tick: the count moves in the detail, the summary
    # stays (the mon logs each change of a summary: a line a tick).
    with pytest.raises(ValueError):
        m.tick()
    assert m.health['TIERTUNE_TICK_FAILED']['summary'] == summary
    assert f'failed ({TICK_FAILURES_WARN + 1})' in m.health['TIERTUNE_TICK_FAILED']['detail'][0]
    get.inputs = good
    m.tick()
    assert set(m.health) == {'TIERTUNE_NO_TARGET'}


def test_a_pool_tiertune_cannot_fit_is_named_in_status_and_health_the_tick_runs_on(
        burst, make_module, monkeypatch):
    """A pool whose fit raises (here made to) is not a failed tick: the tick
    runs to the end for the other pools, status shows the pool's error
    (json and plain), and TIERTUNE_POOL_FAILED is raised after
    TICK_FAILURES_WARN ticks in a row and cleared by the first that fits it."""
    from tiertune import models
    from tiertune.health import TICK_FAILURES_WARN
    real, broken = models._inflow, [True]

    def inflow(*args):
        if broken[0]:
            raise ZeroDivisionError('test: odd samples')
        return real(*args)
    monkeypatch.setattr(models, '_inflow', inflow)
    recs = burst['samples']
    m, get = make_module(recs[0]['inputs'])
    for n, rec in enumerate(recs[:TICK_FAILURES_WARN], 1):
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])      # does not raise
        assert ('TIERTUNE_POOL_FAILED' in m.health) == (n == TICK_FAILURES_WARN), n
    assert 'TIERTUNE_TICK_FAILED' not in m.health and m._failed_ticks == 0
    (detail,) = m.health['TIERTUNE_POOL_FAILED']['detail']
    pool = burst['spec']['cache_pool']
    assert detail.startswith(f'pool {pool}:') and 'ZeroDivisionError: test: odd samples' in detail
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['error'] == {'error': 'ZeroDivisionError: test: odd samples',
                            'since': recs[0]['wall'], 'ticks': TICK_FAILURES_WARN}
    assert row['decision'] is None and row['samples'] == TICK_FAILURES_WARN
    assert f'pool {pool}: not fitted or decided, {TICK_FAILURES_WARN} tick(s)' in \
        m._cmd_status().stdout
    r = m._cmd_eval(pool)
    assert r.retval == -errno.EIO and 'ZeroDivisionError: test: odd samples' in r.stderr
    broken[0] = False
    rec = recs[TICK_FAILURES_WARN]
    get.inputs = rec['inputs']
    m.tick(rec['mono'], rec['wall'])
    assert 'TIERTUNE_POOL_FAILED' not in m.health
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['error'] is None and row['decision'] is not None
    assert 'not fitted' not in m._cmd_status().stdout


def test_an_error_in_the_promote_gate_fails_neither_status_nor_eval(burst, make_module,
                                                                     monkeypatch):
    """The promote gate is computed when status or eval shows it (the law
    never reads it): an error in it shows as the gate's detail."""
    from tiertune import models

    def promote(*args):
        raise ValueError('test: gate')
    monkeypatch.setattr(models, '_promote', promote)
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    r = m._cmd_status(format='json')
    assert r.retval == 0
    (row,) = json.loads(r.stdout)['pools']
    assert row['model']['promote']['limiter'] == 'unknown'
    assert row['model']['promote']['detail'] == 'not computed: ValueError: test: gate'
    assert row['decision'] is not None and m._cmd_status().retval == 0
    r = m._cmd_eval(pool, format='json')
    assert r.retval == 0 and json.loads(r.stdout)['model']['promote']['limiter'] == 'unknown'


def test_options_under_which_no_pool_can_be_fitted_raise_a_health_check(burst, make_module):
    """history_size x sleep_interval under what a model needs (5 intervals
    spanning 60 s): nothing would ever be fitted or tuned, and status alone
    said so, pool by pool."""
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    assert 'TIERTUNE_HISTORY_TOO_SHORT' not in m.health
    m.history_size, m.sleep_interval = 30, 1
    m.tick(recs[2]['mono'], recs[2]['wall'])
    (detail,) = m.health['TIERTUNE_HISTORY_TOO_SHORT']['detail']
    assert 'spanning 29s' in detail and 'history_size to at least 61' in detail
    m.history_size = 61
    m.tick(recs[3]['mono'], recs[3]['wall'])
    assert 'TIERTUNE_HISTORY_TOO_SHORT' not in m.health


def idle_minute_then_the_burst(burst):
    """The recorded burst after a minute and a quarter of idle ticks (its
    first sample's inputs, every 15 s): a module that ran before the burst
    came, so its model is fitted when it does."""
    first = burst['samples'][0]
    lead = [{**first, 'mono': first['mono'] - s, 'wall': first['wall'] - s}
            for s in (75, 60, 45, 30, 15)]
    return lead + burst['samples']


def test_full_risk_is_raised_while_a_burst_fills_the_cache_then_cleared(burst, make_module):
    """The history's first burst: its size is not measured yet, so the law
    takes the inflow for a minute as the surge, more than the cache holds
    above its dirty floor.  (Once bursts are measured, one that fits raises
    nothing: tools/bench/tests/test_full_risk_check.py.)"""
    recs = idle_minute_then_the_burst(burst)
    m, get = make_module(recs[0]['inputs'])
    raised = []
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
        if 'TIERTUNE_CACHE_FULL_RISK' in m.health:
            (view,) = m._tuner.views.values()
            assert view.fitted
            raised.append((rec['phase'], m.health['TIERTUNE_CACHE_FULL_RISK']))
    assert [phase for phase, _ in raised][:1] == ['burst']
    fresh = [c for _, c in raised if not c['detail'][0].startswith('as of ')]
    check = fresh[-1]
    assert check['summary'] == ('1 cache pool(s) predicted to fill within the horizon (now or '
                                'in the last 5 min)')
    (detail,) = check['detail']
    # The band's slow edge is infinite (the inflow's spread is larger than
    # its mean): said as such, not as 'infs'.
    assert detail.startswith('pool cache is predicted to reach 100% of its target')
    assert 'to never), under the 600s horizon: the write surge under way' in detail
    assert detail.endswith('is more than the cache holds above its dirty floor')
    assert 'inf' not in detail
    # The fill has stopped: held (not flipped off and on with single ticks),
    # saying since when, and cleared once FULL_RISK_CLEAR_S pass without it.
    from tiertune.health import FULL_RISK_CLEAR_S
    (held,) = m.health['TIERTUNE_CACHE_FULL_RISK']['detail']
    assert held.startswith('as of ') and f' ago: {detail} (cleared once 300s pass' in held
    last = recs[-1]
    m.tick(last['mono'] + FULL_RISK_CLEAR_S, last['wall'] + FULL_RISK_CLEAR_S)
    assert 'TIERTUNE_CACHE_FULL_RISK' not in m.health, 'still raised long after the fill stopped'


def test_a_full_risk_hold_keeps_a_pool_raised_between_single_ticks():
    from tiertune.health import FULL_RISK_CLEAR_S, FullRiskHold
    h = FullRiskHold()
    both = {1: 'a', 2: 'a'}             # what each pool's check depends on, unchanged
    assert h.hold({1: 'risk'}, both, 100.0) == {1: 'risk'}
    assert h.hold({}, both, 110.0)[1] == 'as of 10s ago: risk (cleared once 300s pass without)'
    assert h.hold({1: 'risk again'}, both, 120.0) == {1: 'risk again'}   # raised anew
    assert 1 in h.hold({}, both, 120.0 + FULL_RISK_CLEAR_S - 1)
    assert h.hold({}, both, 120.0 + FULL_RISK_CLEAR_S) == {}
    h.hold({2: 'x'}, both, 0.0)
    assert h.hold({}, {1: 'a'}, 1.0) == {}      # pool 2 no longer looked at: dropped at once
    h.hold({1: 'x'}, both, 0.0)
    assert h.hold({}, {1: 'a larger target', 2: 'a'}, 1.0) == {}     # the remedy shows at once


def test_full_risk_is_not_raised_from_a_model_not_fitted(burst, make_module):
    """The recorded burst alone spans 53 s, under FIT_MIN_WINDOW_S: the
    model predicts the fill, but the controller does not act on it, and no
    health check is raised from it either."""
    m, get = make_module(burst['samples'][0]['inputs'])
    predicted = []
    for rec in burst['samples']:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
        (view,) = m._tuner.views.values()
        ttf = view.predictions.time_to_full_s
        predicted.append(ttf is not None and ttf.value < 600)
        assert not view.fitted
        assert 'TIERTUNE_CACHE_FULL_RISK' not in m.health
    assert any(predicted), 'the burst predicts no fill: the test proves nothing'


@pytest.mark.parametrize('numbers,why', [
    # a typical surge of 0.95 of the target, dirty floor 0.1: overruns
    ({'surge_bytes': 950 << 20, 'target_bytes': 1000 << 20, 'bursts_seen': 3,
      'surge_overflows': True},
     'the typical write surge (950.0 MiB) is more than the cache holds above its dirty floor'),
    # no burst measured yet: the inflow for a minute
    ({'surge_bytes': 1500 << 20, 'target_bytes': 1000 << 20, 'bursts_seen': 0,
      'surge_overflows': True},
     'the write surge under way (1.5 GiB if it lasts 60 s) is more than the cache holds '
     'above its dirty floor'),
    # fits above the dirty floor, however dirty the cache is now (it drains
    # before the next surge: eviction and flushing make the room)
    ({'surge_bytes': 400 << 20, 'target_bytes': 1000 << 20, 'dirty': 0.7, 'bursts_seen': 2,
      'surge_overflows': False}, None),
    # no target known, or no surge (writes idle)
    ({'surge_bytes': 400 << 20, 'target_bytes': None, 'surge_overflows': True}, None),
    ({'surge_bytes': 0.0, 'target_bytes': 1000 << 20, 'surge_overflows': False}, None),
])
def test_why_writes_would_block(numbers, why):
    from tiertune.health import why_writes_would_block
    assert why_writes_would_block(numbers) == why


def test_bounds_block_is_raised_until_the_bound_allows_the_change(burst, make_module):
    recs = idle_minute_then_the_burst(burst)
    m, get = make_module(recs[0]['inputs'])
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    (detail,) = m.health['TIERTUNE_BOUNDS_BLOCK']['detail']
    assert detail.startswith('pool cache: room for a ')
    assert detail.endswith('but full_ratio_min is 0.60')
    assert m._cmd_set('cache', 'full_ratio_min', 0.3).retval == 0
    m.tick(recs[-1]['mono'] + 1, recs[-1]['wall'] + 1)
    assert 'TIERTUNE_BOUNDS_BLOCK' not in m.health


def _steady_writes(burst, ticks, new=10, over=0, stalled=()):
    """30 s ticks of steady client writes into the recording's 256 MiB
    cache: `new` new 1 MiB objects a tick (the fill grows from 0.43) and
    `over` overwrites of cached ones, the agent flushing LOW as fast as
    they dirty (dirty stays at 0.42).  At the ticks in `stalled` the
    pool's stats read as at the tick before (the OSDs' reports landed just
    after the tick); the next tick reads them caught up."""
    first = burst['samples'][0]
    (tier_pool,) = [p for p in first['inputs']['osd_map']['pools'] if p['cache_mode'] != 'none']
    cache, base = int(tier_pool['pool']), int(tier_pool['tier_of'])

    def stat_sum(inputs, pid):
        (e,) = [p for p in inputs['pool_stats']['pool_stats'] if p['poolid'] == pid]
        return e['stat_sum']

    out = []
    for k in range(ticks):
        n = k - 1 if k in stalled else k      # the tick whose counters show
        inputs = copy.deepcopy(first['inputs'])
        c, b = stat_sum(inputs, cache), stat_sum(inputs, base)
        objs, writes, flushed = 110 + new * n, 110 + (new + over) * n, (new + over) * n
        c.update(num_objects=objs, num_bytes=objs << 20, num_objects_dirty=108,
                 num_write=writes, num_write_kb=writes * 1024,
                 num_flush=flushed, num_flush_kb=flushed * 1024, num_flush_mode_low=16)
        b.update(num_objects=flushed, num_bytes=flushed << 20, num_write=flushed,
                 num_write_kb=flushed * 1024)
        out.append({'inputs': inputs, 'mono': 1000.0 + 30.0 * k,
                    'wall': first['wall'] + 30.0 * k})
    return out


def _bounds_block_each_tick(make_module, recs, setup=None):
    m, get = make_module(recs[0]['inputs'])
    if setup:
        setup(m)
    raised = []
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
        raised.append('TIERTUNE_BOUNDS_BLOCK' in m.health)
    return m, raised


@pytest.mark.parametrize('stalled', [{7}, {7, 9}])
def test_bounds_block_of_the_dirty_high_rule_stays_raised_over_late_stats_reports(
        burst, make_module, stalled):
    """The rule rests on the fill prediction, which one 30 s interval
    without growth removes (quiet for IDLE_AFTER_S, 20 s): the check
    cleared for that tick and came back on the next (a review helper; 4
    raises and clears in 5 ticks with reports out of step every other)."""
    def bound(m):
        assert m._cmd_set('cache', 'dirty_high_ratio_min', 0.5).retval == 0
    _, raised = _bounds_block_each_tick(make_module, _steady_writes(burst, 11, stalled=stalled),
                                        setup=bound)
    assert all(raised[5:]), raised


def test_bounds_block_of_the_full_rule_stays_raised_over_a_late_stats_report(burst,
                                                                            make_module):
    """No write burst measured yet, so the surge is a minute of the inflow
    of the moment, which the one quiet interval reads as idle, and 0."""
    m, raised = _bounds_block_each_tick(
        make_module, _steady_writes(burst, 10, new=0, over=60, stalled={7}))
    (view,) = m._tuner.views.values()
    assert view.decision.bounds_block and 'full_ratio_min' in view.decision.bounds_block
    assert all(raised[5:]), raised
    # the operator's remedy drops it at once
    assert m._cmd_set('cache', 'full_ratio_min', 0.3).retval == 0
    last = _steady_writes(burst, 11, new=0, over=60)[-1]
    m.tick(last['mono'], last['wall'])
    assert 'TIERTUNE_BOUNDS_BLOCK' not in m.health


@pytest.mark.parametrize('change', [{'cache_mode': 'proxy'}, {'cache_mode': 'forward'},
                                    {'target_max_bytes': 0}])
def test_no_bounds_block_for_a_tier_being_drained(burst, make_module, change):
    # Seen on the demo: a cache tier set to proxy mode to be drained and
    # removed (the usual way out of cache tiering) raised a warning to
    # widen its bounds for a write surge it can no longer take.
    recs = idle_minute_then_the_burst(burst)
    m, get = make_module(recs[0]['inputs'])
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    assert 'TIERTUNE_BOUNDS_BLOCK' in m.health
    get.inputs = copy.deepcopy(recs[-1]['inputs'])
    (cache,) = [p for p in get.inputs['osd_map']['pools'] if p['cache_mode'] != 'none']
    cache.update(change)
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[-1]['mono'] + 1, recs[-1]['wall'] + 1)
    assert 'TIERTUNE_BOUNDS_BLOCK' not in m.health
    (pool,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert pool['decision']['action'] == 'hold'


def test_history_of_a_pool_that_is_no_longer_a_tier(burst, make_module):
    # Removing a tier goes through cache mode none: its decisions stay
    # asked for by name (a base pool that never was a tier is EINVAL).
    from tiertune.state import DecisionRecord
    from tiertune.topology import Ratios
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    r = Ratios(0.4, 0.6, 0.8)
    m._tuner.history(pid).append(DecisionRecord(time=1.0, pool=pool, mode='on', old=r,
                                                new=r, reason='x', result='applied'))
    get.inputs = copy.deepcopy(recs[2]['inputs'])
    for p in get.inputs['osd_map']['pools']:
        if p['pool_name'] == pool:
            p['cache_mode'] = 'none'
    out = json.loads(m._cmd_history(pool, format='json').stdout)
    assert [h['reason'] for h in out['history']] == ['x']
    assert m._cmd_history(burst['spec']['base_pool']).retval == -errno.EINVAL
    assert m._cmd_history('nosuchpool').retval == -errno.ENOENT


def run_ticks_saving_every_tick(make_module, recs):
    m, get = make_module(recs[0]['inputs'])
    m.samples_save_interval = 0
    for rec in recs:
        get.inputs = rec['inputs']
        m.tick(rec['mono'], rec['wall'])
    return m, get


def test_samples_and_so_the_model_survive_a_restart(burst, make_module):
    recs = burst['samples']
    m, get = run_ticks_saving_every_tick(make_module, recs)
    (before,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert before['samples'] == len(recs)
    assert before['model']['inflow']['bursts_seen'] == 1
    # the new mgr takes over 40 s after the last tick, on a clock of its own
    m2 = restart(get)
    m2._load(mono=3.0, wall=recs[-1]['wall'] + 40.0)
    (after,) = json.loads(m2._cmd_status(format='json').stdout)['pools']
    assert after['samples'] == before['samples']
    # its first sample is not measured from the stored ones (the interval
    # spans the failover): that tick the model waits
    m2.tick(mono=3.0, wall=recs[-1]['wall'] + 40.0)
    (first,) = json.loads(m2._cmd_status(format='json').stdout)['pools']
    assert first['samples'] == before['samples'] + 1
    assert not first['model']['fitted']
    assert 'not measured' in first['model']['why_not']
    # its second fits on that history, which now spans the 60 s a fit
    # needs (53 s recorded + 70 s; a fresh one would have two samples),
    # and remembers the burst the old mgr saw
    m2.tick(mono=33.0, wall=recs[-1]['wall'] + 70.0)
    (ticked,) = json.loads(m2._cmd_status(format='json').stdout)['pools']
    assert ticked['samples'] == before['samples'] + 2
    assert ticked['model']['fitted'], ticked['model']['why_not']
    b, a = before['model']['inflow'], ticked['model']['inflow']
    assert (a['bursts_seen'], a['burst_bytes'], a['burst_seconds']) == \
        (b['bursts_seen'], b['burst_bytes'], b['burst_seconds'])


def test_a_burst_after_the_last_save_is_not_read_across_a_failover_as_io_now(burst,
                                                                             make_module,
                                                                             monkeypatch):
    """The old mgr saved its samples of an idle cache, then a burst filled
    it (not saved: samples_save_interval), then the mgr failed.  The new
    mgr's first sample is not measured from the stored ones: the interval
    spans the gap, and its average would read as the pool filling now (a
    "predicted full" and TIERTUNE_CACHE_FULL_RISK on an idle cache, seen on
    the demo cluster)."""
    recs = burst['samples']
    idle, after = recs[0]['inputs'], recs[-1]['inputs']
    m, get = make_module(idle)
    m.samples_save_interval = 0
    wall0 = recs[0]['wall']
    for k in range(10):                       # five idle minutes, each tick saved
        m.tick(30.0 * k, wall0 + 30.0 * k)
    (pid,) = m._tiers
    assert m._tuner.views[pid].fitted
    get.inputs = after                        # the burst, and the mgr fails
    m2 = restart(get)
    wall = wall0 + 270.0 + 40.0
    m2._load(mono=5.0, wall=wall)
    m2.tick(mono=5.0, wall=wall)
    view = m2._tuner.views[pid]
    assert not view.fitted and 'not measured' in (view.model.why_not or '')
    # eval, at that tick's moment, decides on the same model
    monkeypatch.setattr(time, 'monotonic', lambda: 5.0)
    monkeypatch.setattr(time, 'time', lambda: wall)
    out = json.loads(m2._cmd_eval(burst['spec']['cache_pool'], format='json').stdout)
    assert out['model'] == json.loads(json.dumps(view.model.as_dict()))
    monkeypatch.undo()
    # status shows no predictions of the model not fitted
    (row,) = json.loads(m2._cmd_status(format='json').stdout)['pools']
    assert row['model']['fitted'] is False and row['model']['predictions'] is None
    # Before: "predicted full in 43 s", a 252 MiB write surge, both checks
    # raised for as long as they hold.
    raised_for_the_gap = {'TIERTUNE_CACHE_FULL_RISK', 'TIERTUNE_BOUNDS_BLOCK'}
    assert not raised_for_the_gap & set(m2.health)
    for k in range(1, 4):                     # the cache idle since
        m2.tick(mono=5.0 + 30.0 * k, wall=wall + 30.0 * k)
        view = m2._tuner.views[pid]
        assert view.fitted, view.model.why_not
        assert view.predictions.time_to_full_s is None
        assert view.model.inflow.state == 'idle' and view.model.inflow.short_bps == 0.0
        assert not raised_for_the_gap & set(m2.health)


def _with_acting(inputs, pid, acting):
    out = copy.deepcopy(inputs)
    for p in out['pool_stats']['pool_stats']:
        if p['poolid'] == pid:
            p['acting'] = acting
    return out


def test_bounds_block_stays_raised_through_a_backfill(burst, make_module):
    """A backfill raises the pool's acting tick after tick (a PG's acting
    set from 2 to 3): each such interval has no rates, and the model stays
    fitted on the others.  Unfitted for them (as for the interval across a
    failover), TIERTUNE_BOUNDS_BLOCK cleared and came back each tick (a
    review helper)."""
    recs = idle_minute_then_the_burst(burst)
    m, get = run_ticks(make_module, recs)
    (pid,) = m._tiers
    assert 'TIERTUNE_BOUNDS_BLOCK' in m.health
    last, raised = recs[-1], []
    for k, acting in enumerate((12, 13, 13, 14, 14, 15, 16), start=1):
        get.inputs = _with_acting(last['inputs'], pid, acting)
        m.tick(last['mono'] + 30.0 * k, last['wall'] + 30.0 * k)
        raised.append('TIERTUNE_BOUNDS_BLOCK' in m.health and m._tuner.views[pid].fitted)
    assert all(raised), raised


def test_an_unmeasured_interval_stays_unmeasured_over_a_second_failover(burst, make_module):
    recs = burst['samples']
    m, get = run_ticks_saving_every_tick(make_module, recs[:8])
    (pid,) = m._tiers
    m2 = restart(get)
    wall = recs[7]['wall'] + 40.0
    m2._load(mono=5.0, wall=wall)
    m2.samples_save_interval = 0
    for k, rec in enumerate(recs[8:]):
        get.inputs = rec['inputs']
        m2.tick(mono=5.0 + 3.0 * k, wall=wall + 3.0 * k)
    gap = m2._book.get(pid).entries[8]
    assert gap.rates is None
    m3 = restart(get)
    m3._load(mono=100.0, wall=wall + 60.0)
    again = m3._book.get(pid).entries
    assert len(again) == len(recs)
    assert again[8].rates is None and again[9].rates is not None
    assert m3._book.get(pid).not_current() is not None     # until its own first sample


def test_samples_from_before_an_overlay_change_during_a_failover_are_dropped(burst,
                                                                            make_module):
    # The overlay removed while no mgr was active: the new mgr has no
    # earlier tier to compare with, but the samples were stored with the
    # overlay they were taken under.
    recs = burst['samples']
    m, get = run_ticks_saving_every_tick(make_module, recs)
    (pid,) = m._tiers
    later = recs[-1]['wall'] + 40.0
    m2 = restart(get)       # the overlay as it was: the samples are kept
    m2._load(mono=3.0, wall=later)
    m2.tick(mono=3.0, wall=later)
    assert len(m2._book.get(pid)) == len(recs) + 1
    get.inputs = _without_overlay(recs[-1]['inputs'])
    m3 = restart(get)       # removed meanwhile: they start again
    m3._load(mono=3.0, wall=later)
    assert len(m3._book.get(pid)) == len(recs)
    m3.tick(mono=3.0, wall=later)
    assert len(m3._book.get(pid)) == 1


def test_samples_are_saved_at_most_every_samples_save_interval(burst, make_module):
    from tiertune.module import SAMPLES_PREFIX
    recs = burst['samples']
    m, get = make_module(recs[0]['inputs'])
    m.samples_save_interval = 20
    writes = []
    real_set = m.set_store
    m.set_store = lambda k, v: (writes.append(k), real_set(k, v))[1]
    saved_at = []
    for rec in recs:
        get.inputs = rec['inputs']
        n = len(writes)
        m.tick(rec['mono'], rec['wall'])
        if any(k.startswith(SAMPLES_PREFIX) for k in writes[n:]):
            saved_at.append(rec['mono'])
    assert saved_at[0] == recs[0]['mono']           # the first tick saves
    # Then the first tick at least 20 s after each save: no sooner, and
    # (what a failover's restore needs) no later.
    monos = [rec['mono'] for rec in recs]
    expected = [monos[0]]
    for t in monos:
        if t - expected[-1] >= 20:
            expected.append(t)
    assert len(expected) >= 3 and saved_at == expected


def test_samples_older_than_the_history_window_are_not_restored(burst, make_module):
    recs = burst['samples']
    m, get = run_ticks_saving_every_tick(make_module, recs)
    m2 = restart(get, history_size=120, sleep_interval=30)
    m2._load(mono=3.0, wall=recs[-1]['wall'] + 120 * 30 + 1)   # down for over an hour
    (row,) = json.loads(m2._cmd_status(format='json').stdout)['pools']
    assert row['samples'] == 0


def test_stored_samples_of_a_pool_no_longer_a_cache_tier_are_removed(burst, make_module):
    from tiertune.module import SAMPLES_PREFIX
    recs = burst['samples']
    m, get = run_ticks(make_module, recs)
    assert any(k.startswith(SAMPLES_PREFIX) for k in m.get_store_prefix(SAMPLES_PREFIX))
    m2 = restart(get)
    inputs = copy.deepcopy(recs[-1]['inputs'])
    for p in inputs['osd_map']['pools']:          # the overlay removed: no cache tier left
        p['tier_of'], p['tiers'], p['read_tier'], p['write_tier'] = -1, [], -1, -1
        p['cache_mode'] = 'none'
    get.inputs = inputs
    m2.tick(mono=3.0, wall=recs[-1]['wall'] + 40.0)
    assert m2.get_store_prefix(SAMPLES_PREFIX) == {}


def test_many_pools_are_saved_a_few_a_tick_longest_unsaved_first(burst, make_module):
    from tiertune.module import SAMPLES_PREFIX, SAMPLES_SAVES_PER_TICK
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    (pid,) = m._tiers
    for other in range(pid + 1, pid + 5):         # four more cache pools' histories
        m._book.restore(other, m._book.saved_entries(pid))
    pools = list(range(pid, pid + 5))
    m._samples_saved.clear()
    m.samples_save_interval = 0
    order = []
    for tick in range(6 // SAMPLES_SAVES_PER_TICK):
        out = m._samples_to_save_locked(pools, pools, mono=100.0 + tick)
        assert len(out) == SAMPLES_SAVES_PER_TICK
        assert all(json.loads(v or 'null')['v'] == 1 for v in out.values())
        order += [int(k[len(SAMPLES_PREFIX):]) for k in out]
    # all five before any is written twice, then the first again
    assert sorted(order[:5]) == pools and order[5] == order[0]


# ----- the stored state over a restart: commands first, unreadable values, deleted pools

def test_a_command_before_the_first_tick_acts_on_the_stored_settings(burst, make_module):
    """The mgr takes commands as soon as the module is loaded, possibly
    before the serve thread has loaded the store: a command then must not
    save defaults over every other pool's settings."""
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    assert m._cmd_mode('on').retval == 0
    assert m._cmd_set(pool, 'dirty_ratio_min', 0.2).retval == 0
    other = m._tuner.settings.pool(pid + 100)    # another cache pool's settings
    other.mode = 'off'
    m._save_settings_locked()
    m2 = restart(get)                             # no tick yet
    assert m2._cmd_set(pool, 'max_step', 0.2).retval == 0
    stored = json.loads(m2.get_store('state'))
    assert stored['mode'] == 'on'
    assert stored['pools'][str(pid)]['bounds']['dirty_ratio_min'] == 0.2
    assert stored['pools'][str(pid)]['knobs']['max_step'] == 0.2
    assert stored['pools'][str(pid + 100)]['mode'] == 'off'
    m3 = restart(get)
    assert m3._cmd_mode(pool, 'warn').retval == 0
    assert json.loads(m3.get_store('state'))['pools'][str(pid + 100)]['mode'] == 'off'
    m4 = restart(get)
    assert json.loads(m4._cmd_status(format='json').stdout)['mode'] == 'on'


@pytest.mark.parametrize('stored', ['{not json', '[1, 2]', '{"mode": "on", "pools": 7}'])
def test_unreadable_stored_settings_give_the_defaults_and_are_kept(burst, make_module, stored):
    m, get = run_ticks(make_module, burst['samples'][:2])
    m.set_store('state', stored)
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])     # does not raise
    assert m2._tuner.settings.mode == 'warn' and m2._tuner.views
    assert m2.get_store('state.unreadable') == stored
    assert any('stored settings partly unreadable' in line
               for line in m2.cluster_log_lines)
    # What was read is stored: the next mgr neither warns again nor
    # overwrites the original kept (found by a review helper).
    m2.cluster_log_lines.clear()
    m3 = restart(get)
    m3.tick(burst['samples'][3]['mono'], burst['samples'][3]['wall'])
    assert not any('unreadable' in line for line in m3.cluster_log_lines)
    assert m3.get_store('state.unreadable') == stored


def status_while_a_store_write_waits(m, tick_at, key=None):
    """Run a tick on a thread, hold the first store write it makes (of
    `key`, when given) at the mon, and ask for status meanwhile: asserts
    status answers while that write waits.  The keys written, in order."""
    import threading
    real_set_store, at_mon, mon_answers = m.set_store, threading.Event(), threading.Event()
    written = []

    def slow_write(k, text):
        if (key is None or k == key) and not at_mon.is_set():
            at_mon.set()
            assert mon_answers.wait(10)
        written.append(k)
        real_set_store(k, text)

    m.set_store = slow_write
    tick = threading.Thread(target=m.tick, args=(tick_at['mono'], tick_at['wall']))
    answers = []
    status = threading.Thread(target=lambda: answers.append(m._cmd_status(format='json')))
    tick.start()
    try:
        assert at_mon.wait(10)
        status.start()
        status.join(5)
        assert not status.is_alive() and answers[0].retval == 0
        assert tick.is_alive()                    # still at the mon
    finally:
        mon_answers.set()
        tick.join(10)
        if status.ident is not None:
            status.join(10)
        m.set_store = real_set_store
    assert not tick.is_alive()
    return written


def test_status_answers_while_the_load_stores_unreadable_settings(burst, make_module):
    """The tick that loads unreadable settings writes their copy and what
    was read after the lock, the copy first: a status meanwhile answers."""
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    m.set_store('state', '{not json')
    m2 = restart(get)
    written = status_while_a_store_write_waits(m2, recs[2])
    assert written[:2] == ['state.unreadable', 'state']
    assert m2.get_store('state.unreadable') == '{not json'
    assert json.loads(m2.get_store('state'))['mode'] == 'warn'


def test_one_unreadable_pool_entry_leaves_the_others(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    m.set_store('state', json.dumps({'mode': 'on', 'pools': {
        str(pid): {'mode': 'off', 'bounds': {'dirty_ratio_min': 0.2}},
        '77': {'mode': 'on', 'last_change_wall': 'yesterday'},
        '78': 'not a pool entry',
        # A planned change with no path failed every tick (a review helper).
        '79': {'mode': 'on', 'planned': {'path': [], 'wall': 1.0}}}}))
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])
    s = m2._tuner.settings
    assert s.mode == 'on' and s.pools[pid].mode == 'off'
    assert s.pools[pid].bounds.dirty_ratio_min == 0.2
    # Unreadable entries: default bounds in warn, not the default mode (on).
    assert s.pools[77].mode == 'warn' and s.pools[78].mode == 'warn'
    assert s.pools[79].mode == 'warn' and s.pools[79].planned is None
    assert s.pools[77].bounds == s.pools[pid].bounds.__class__()
    assert '"77"' in m2.get_store('state.unreadable')


def _strict_json(text):
    """json.loads refusing NaN and Infinity, which Python writes and reads
    but no other JSON parser takes."""
    def refuse(word):
        raise ValueError(f'not JSON: {word}')
    return json.loads(text, parse_constant=refuse)


def test_stored_values_no_set_accepts_are_their_defaults_in_warn(burst, make_module):
    """A NaN or infinite bound or knob, or a bound outside 0..1 (a store
    edited by hand: Python's json reads NaN), was kept as stored: status'
    JSON carried NaN, and every `set` of another key on the pool was refused
    (found by a review helper).  Each goes back to its default, the pool to
    warn (off stays off), said in the cluster log, the original kept."""
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    stored = json.dumps({'mode': 'on', 'pools': {
        str(pid): {'mode': 'on', 'bounds': {'full_ratio_max': math.nan, 'dirty_ratio_min': 0.2},
                   'knobs': {'horizon_s': math.inf}},
        '77': {'mode': 'off', 'bounds': {'full_ratio_min': -1.0}},
        '78': {'bounds': {'full_ratio_max': 1.5}}}})
    m.set_store('state', stored)
    m2 = restart(get)
    m2.tick(recs[2]['mono'], recs[2]['wall'])
    s = m2._tuner.settings
    ps = s.pools[pid]
    assert (ps.mode, ps.bounds.full_ratio_max, ps.knobs.horizon_s) == ('warn', 0.9, 600.0)
    assert ps.bounds.dirty_ratio_min == 0.2           # the usable value kept
    assert (s.pools[77].mode, s.pools[77].bounds.full_ratio_min) == ('off', 0.6)
    assert (s.pools[78].mode, s.pools[78].bounds.full_ratio_max) == ('warn', 0.9)
    assert m2.get_store('state.unreadable') == stored
    assert any('full_ratio_max nan' in line and 'horizon_s inf' in line
               for line in m2.cluster_log_lines)
    (row,) = _strict_json(m2._cmd_status(format='json').stdout)['pools']
    assert row['autotune']['bounds']['full_ratio_max'] == 0.9
    assert m2._cmd_set(pool, 'max_step', 0.2).retval == 0
    _strict_json(m2.get_store('state'))


@pytest.mark.parametrize('when', ['NaN', '1e20', '"yesterday"'])
def test_a_stored_decision_at_no_printable_time_is_left_out(burst, make_module, when):
    """A decision whose time is NaN or past what time_t holds was kept,
    and `tiertune history` raised printing it (a review helper)."""
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    good = {'time': 1.0, 'pool': 'cache', 'mode': 'on', 'reason': 'idle',
            'result': 'applied', 'old': {'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8},
            'new': {'dirty': 0.3, 'dirty_high': 0.6, 'full': 0.8}}
    bad = json.dumps({**good, 'time': 0.0}).replace('"time": 0.0', f'"time": {when}')
    m.set_store(f'history/{pid}', '[' + ', '.join([json.dumps(good)] * 2 + [bad]) + ']')
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])
    assert len(m2._tuner.history(pid)) == 2
    r = m2._cmd_history()
    assert r.retval == 0 and r.stdout.count('1970-01-01') == 2
    assert len(_strict_json(m2._cmd_history(format='json').stdout)['history']) == 2


def test_a_stored_baseline_that_is_no_ratio_leaves_reset_an_answer(burst, make_module):
    """A baseline outside 0..1 made `reset` raise in actuation (a review
    helper).  The pool's entry is unreadable: default bounds, warn, no
    baseline (the original is kept in state.unreadable), and reset says
    there is none to restore."""
    m, get = run_ticks(make_module, burst['samples'][:2])
    pool = burst['spec']['cache_pool']
    (pid,) = m._tiers
    m.set_store('state', json.dumps({'mode': 'warn', 'pools': {str(pid): {
        'mode': 'on', 'baseline': {'dirty': 1.5, 'dirty_high': 0.6, 'full': 0.8}}}}))
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])
    ps = m2._tuner.settings.pools[pid]
    assert ps.mode == 'warn' and ps.baseline is None
    assert any('dirty 1.5 is not a ratio in 0..1' in line for line in m2.cluster_log_lines)
    r = m2._cmd_reset(pool)
    assert r.retval == 0 and 'no baseline' in r.stdout, r


def test_an_unreadable_stored_history_is_left_out(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    m.set_store(f'history/{pid}', '[{"time": 1}]')
    m.set_store('history/notapool', '[]')
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])
    assert m2._tuner.views and not m2._tuner.history(pid)


def test_one_unreadable_stored_decision_leaves_the_others(burst, make_module):
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    good = {'time': 1.0, 'pool': 'cache', 'mode': 'on', 'reason': 'idle',
            'result': 'applied', 'old': {'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8},
            'new': {'dirty': 0.3, 'dirty_high': 0.6, 'full': 0.8}}
    m.set_store(f'history/{pid}', json.dumps([good] * 5 + [{**good, 'new': {'dirty': 0.3}}]))
    m2 = restart(get)
    m2.tick(burst['samples'][2]['mono'], burst['samples'][2]['wall'])
    assert len(m2._tuner.history(pid)) == 5


def test_a_deleted_pools_settings_and_history_are_dropped(burst, make_module):
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    (pid,) = m._tiers
    gone = 4242                                   # no such pool in the map
    m._tuner.settings.pool(gone).mode = 'on'
    m._tuner.history(gone)
    m.set_store(f'history/{gone}', '[]')
    m._tuner.settings.pool(pid).mode = 'off'
    m._save_settings_locked()
    m.notify(NotifyType.osd_map, '')
    inputs = copy.deepcopy(recs[2]['inputs'])
    inputs['osd_map']['pool_max'] = gone + 10     # pools up to there were made, gone deleted
    get.inputs = inputs
    m.tick(recs[2]['mono'], recs[2]['wall'])
    assert gone not in m._tuner.settings.pools and gone not in m._tuner.histories
    assert m.get_store(f'history/{gone}') is None
    stored = json.loads(m.get_store('state'))['pools']
    assert str(gone) not in stored and stored[str(pid)]['mode'] == 'off'
    # A pool newer than the map the tick read (set up by a command in
    # between) is not taken for a deleted one.
    newer = gone + 11
    m._tuner.settings.pool(newer).mode = 'off'
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[2]['mono'] + 1, recs[2]['wall'] + 1)
    assert m._tuner.settings.pools[newer].mode == 'off'
    # A pool that is only no longer a cache tier keeps its settings.
    inputs = copy.deepcopy(recs[3]['inputs'])
    for p in inputs['osd_map']['pools']:
        p['tier_of'], p['tiers'], p['read_tier'], p['write_tier'] = -1, [], -1, -1
        p['cache_mode'] = 'none'
    get.inputs = inputs
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[3]['mono'], recs[3]['wall'])
    assert m._tuner.settings.pools[pid].mode == 'off'


def test_a_deleted_tier_leaves_no_state_behind(burst, make_module):
    """A mgr runs for months while tiers come and go, and Ceph never reuses
    a pool id: nothing kept per pool may outlive the pool."""
    recs = burst['samples']
    m, get = make_module(with_a_second_tier(recs[0]['inputs']))
    for rec in recs[:4]:
        get.inputs = with_a_second_tier(rec['inputs'])
        m.notify(NotifyType.osd_map, '')
        m.tick(rec['mono'], rec['wall'])
    assert 13 in m._tiers and 13 in m._drains_looked_at
    inputs = copy.deepcopy(recs[4]['inputs'])
    inputs['osd_map']['pool_max'] = 13            # pools 12 and 13 deleted
    get.inputs = inputs
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[4]['mono'], recs[4]['wall'])
    t = m._tuner
    kept = {'settings': t.settings.pools, 'histories': t.histories, 'views': t.views,
            'series': t.series, 'failures': t.failures, 'refusals': t.refusals,
            'retry_after': t.retry_after, 'own_changes': t.own_changes,
            'book': m._book.pools, 'samples_saved': m._samples_saved,
            'sample_rows': m._sample_rows, 'drains': m._drains.events,
            'drains_looked_at': m._drains_looked_at, 'full_risk': m._full_risk.last,
            'bounds_block': m._bounds_block.last, 'pg_num_seen': m._splits.pg_num_seen,
            'watching': m._splits.watching, 'limits': m._limits}
    assert {name: sorted(set(d) & {12, 13}) for name, d in kept.items()
            if set(d) & {12, 13}} == {}
    assert [k for k in m.get_store_prefix('') if k.endswith(('/12', '/13'))] == []


def test_the_stored_decision_history_fits_the_mons_limit(burst, make_module):
    from collections import deque

    from tiertune.state import HISTORY_KEEP, HISTORY_MAX_TEXT_BYTES, DecisionRecord
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    r = ratios_from_dict({'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8})
    m._tuner.histories[pid] = deque(
        (DecisionRecord(time=float(i), pool='cache', mode='on', old=r, new=r,
                        reason='a long reason ' * 70, result='applied')
         for i in range(HISTORY_KEEP)), maxlen=HISTORY_KEEP)
    m._save_history(pid)
    text = m.get_store(f'history/{pid}')
    assert len(text.encode()) <= HISTORY_MAX_TEXT_BYTES
    kept = json.loads(text)
    assert 0 < len(kept) < HISTORY_KEEP and kept[-1]['time'] == HISTORY_KEEP - 1
    assert [d['time'] for d in kept] == list(range(HISTORY_KEEP - len(kept), HISTORY_KEEP))
    m._tuner.histories[pid] = deque(list(m._tuner.histories[pid])[:3])
    m._save_history(pid)
    assert len(json.loads(m.get_store(f'history/{pid}'))) == 3


def _with_ratios(inputs, pool, dirty_micro, bump_epoch):
    out = copy.deepcopy(inputs)
    for p in out['osd_map']['pools']:
        if p['pool_name'] == pool:
            p['cache_target_dirty_ratio_micro'] = dirty_micro
            p['last_change'] = str(int(p['last_change']) + bump_epoch)
    return out


def test_on_again_after_a_hand_change_in_warn_mode_stays_on(burst, make_module, monkeypatch):
    """on, a change by tiertune, warn, a ratio set by hand, on: the operator
    said on with the hand-set ratio in place, so it is where tiertune goes
    on from, not a change to respect by going back to warn."""

    from tiertune import controller
    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    sets = []
    monkeypatch.setattr(m, '_pool_set', lambda *args: sets.append(args))
    real = controller.decide
    force_change(monkeypatch, Ratios(0.2, 0.6, 0.8))
    assert m._cmd_mode(pool, 'on').retval == 0
    m.tick(recs[6]['mono'], recs[6]['wall'])
    ps = m._tuner.settings.pools[pid]
    assert sets and ps.last_applied == Ratios(0.2, 0.6, 0.8)
    assert m._cmd_mode(pool, 'warn').retval == 0
    get.inputs = _with_ratios(recs[7]['inputs'], pool, 500000, bump_epoch=3)  # by hand: 0.5
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[7]['mono'], recs[7]['wall'])
    assert m._cmd_mode(pool, 'on').retval == 0
    monkeypatch.setattr(controller, 'decide', real)
    get.inputs = _with_ratios(recs[8]['inputs'], pool, 500000, bump_epoch=3)
    m.tick(recs[8]['mono'], recs[8]['wall'])
    assert ps.mode == 'on' and ps.manual_change is None
    assert ps.last_applied == Ratios(0.5, 0.6, 0.8)       # taken over on `on`


def test_a_tick_stores_a_changes_history_line_before_the_settings_that_clear_its_plan(
        burst, make_module, monkeypatch):
    """The settings (the plan cleared) are the tick's last store write after
    its changes: a failover between the writes leaves the plan and its
    line, which the next mgr settles without a second line; the other way
    round, the line was lost."""
    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    monkeypatch.setattr(m, '_pool_set', lambda *args: None)
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    assert m._cmd_mode(pool, 'on').retval == 0
    writes = []
    real_set = m.set_store
    monkeypatch.setattr(m, 'set_store', lambda k, v: (writes.append((k, v)), real_set(k, v))[1])
    get.inputs = recs[6]['inputs']
    m.tick(recs[6]['mono'], recs[6]['wall'])
    keys = [k for k, _ in writes]
    line = keys.index(f'history/{pid}')
    # The plan before the commands, the settings that clear it after the line.
    plans = [json.loads(v)['pools'][str(pid)]['planned'] for k, v in writes[:line]
             if k == 'state']
    assert plans and plans[-1] is not None
    assert 'state' in keys[line:]
    assert json.loads(m.get_store('state'))['pools'][str(pid)]['planned'] is None


def test_on_clears_a_change_left_planned_by_an_earlier_mgr(burst, make_module):
    """`on` takes whatever ratios the pool has as tiertune's own: a change
    an earlier mgr left planned (cut short, then the pool left in warn)
    is not settled later with its old time and an audit line."""
    from tiertune.state import PlannedChange
    from tiertune.topology import Ratios
    m, get = run_ticks(make_module, burst['samples'][:2])
    (pid,) = m._tiers
    pool = burst['spec']['cache_pool']
    m._tuner.settings.pool(pid).planned = PlannedChange((Ratios(0.4, 0.6, 0.8),
                                                         Ratios(0.4, 0.6, 0.9)), 1.0)
    assert m._cmd_mode(pool, 'on').retval == 0
    assert m._tuner.settings.pool(pid).planned is None
    assert json.loads(m.get_store('state'))['pools'][str(pid)]['planned'] is None


def test_commands_answer_while_the_tick_waits_for_the_mon(burst, make_module, monkeypatch):
    """The tick's `osd pool set`s run without the module's lock: the mgr
    runs every module's commands on one thread, and a tiertune command
    waiting for the lock would hold up all of them.  While the tick waits
    for the mon, status and eval answer, a reset of the pool being changed
    is EBUSY (not interleaved with the tick's commands), a mode change is
    kept; the tick then records its change, and the store ends with both."""
    import threading

    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    assert m._cmd_mode(pool, 'on').retval == 0
    in_mon, mon_answers, sets = threading.Event(), threading.Event(), []

    def slow_pool_set(*args):
        in_mon.set()
        assert mon_answers.wait(10)
        sets.append(args)

    monkeypatch.setattr(m, '_pool_set', slow_pool_set)
    get.inputs = recs[6]['inputs']
    tick = threading.Thread(target=m.tick, args=(recs[6]['mono'], recs[6]['wall']))
    tick.start()
    try:
        assert in_mon.wait(10)
        # Each would block until the mon answered if it waited for the lock.
        assert m._cmd_status(format='json').retval == 0
        assert m._cmd_eval(pool, format='json').retval == 0
        assert m._cmd_reset(pool).retval == -errno.EBUSY
        assert m._cmd_mode(pool, 'warn').retval == 0
        assert tick.is_alive() and not sets
    finally:
        mon_answers.set()
        tick.join(10)
    # The command in flight completes; no other is sent once the pool is
    # in warn (of three: full up, then dirty and dirty_high down).
    assert not tick.is_alive() and sets == [(pid, pool, 'cache_target_full_ratio', '0.900000')]
    ps = m._tuner.settings.pool(pid)
    assert ps.mode == 'warn' and ps.last_applied == Ratios(0.4, 0.6, 0.9)
    assert ps.planned is None and m._changing == set()
    stored = json.loads(m.get_store('state'))['pools'][str(pid)]
    assert stored['mode'] == 'warn' and stored['planned'] is None
    assert stored['last_applied'] == {'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.9}
    result = json.loads(m.get_store(f'history/{pid}'))[-1]['result']
    # no retry is promised: the pool is not in on (the line said "retry in 30s")
    assert 'no longer in on mode' in result and 'retry' not in result
    assert 'part of it was made (0.40/0.60/0.90)' in result
    # The pool is no longer being changed: reset goes ahead.
    monkeypatch.setattr(m, '_pool_set', lambda *args: None)
    assert m._cmd_reset(pool).retval == 0


def test_store_writes_are_made_in_the_order_they_were_taken(burst, make_module,
                                                            monkeypatch):
    """The tick writes what it staged without the lock.  A command's write
    that comes while the tick's is at the mon waits for it, and is made
    after it: the store never goes back to the tick's older text."""
    import threading
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:3])
    (pid,) = m._tiers
    real_set_store, at_mon, mon_answers = m.set_store, threading.Event(), threading.Event()

    def slow_first_write(key, text):
        if not at_mon.is_set():
            at_mon.set()
            assert mon_answers.wait(10)
        real_set_store(key, text)

    monkeypatch.setattr(m, 'set_store', slow_first_write)
    m._stage_settings()                              # taken now, as a tick does
    tick_write = threading.Thread(target=m._write_staged)
    tick_write.start()
    try:
        assert at_mon.wait(10)
        command = threading.Thread(target=m._cmd_mode, args=(pool, 'on'))
        command.start()
        command.join(0.5)
        assert command.is_alive()       # its write waits for the tick's
    finally:
        mon_answers.set()
        tick_write.join(10)
        command.join(10)
    assert json.loads(m.get_store('state'))['pools'][str(pid)]['mode'] == 'on'


def test_status_answers_while_the_tick_stores_a_deleted_pools_settings(burst, make_module):
    """A deleted pool's settings are dropped under the lock but written to
    the store after it: a status that comes while that write is at the mon
    answers, it does not wait for the mon's round trip."""
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:2])
    gone = 4242                                   # no such pool in the map
    m._tuner.settings.pool(gone).mode = 'on'
    m._save_settings_locked()
    inputs = copy.deepcopy(recs[2]['inputs'])
    inputs['osd_map']['pool_max'] = gone + 10     # pools up to there were made, gone deleted
    get.inputs = inputs
    m.notify(NotifyType.osd_map, '')
    assert 'state' in status_while_a_store_write_waits(m, recs[2], key='state')
    assert str(gone) not in json.loads(m.get_store('state'))['pools']


def test_on_after_a_hand_change_made_while_a_tick_reads_the_map_stays_on(burst, make_module,
                                                                         monkeypatch):
    """warn, then a ratio set by hand and `mode on` while a tick has read
    the OSD map (before the hand change) but not yet decided: `on` takes
    the hand-set ratio as tiertune's own.  The tick does not decide on its
    older map with the new settings (it took the older ratio as adopted,
    and the next tick set the pool to warn for a change by hand)."""
    import threading

    import tiertune.module as tm
    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    monkeypatch.setattr(m, '_pool_set', lambda *args: None)
    assert m._cmd_mode(pool, 'warn').retval == 0
    real_take, map_read, go_on = tm.take_samples, threading.Event(), threading.Event()

    def take_after_a_pause(*args, **kwargs):
        map_read.set()
        assert go_on.wait(10)
        return real_take(*args, **kwargs)

    monkeypatch.setattr(tm, 'take_samples', take_after_a_pause)
    get.inputs = recs[6]['inputs']
    m.notify(NotifyType.osd_map, '')
    tick = threading.Thread(target=m.tick, args=(recs[6]['mono'], recs[6]['wall']))
    tick.start()
    try:
        assert map_read.wait(10)
        get.inputs = _with_ratios(recs[7]['inputs'], pool, 500000, bump_epoch=3)  # by hand: 0.5
        m.notify(NotifyType.osd_map, '')
        assert m._cmd_mode(pool, 'on').retval == 0
    finally:
        go_on.set()
        tick.join(10)
    assert not tick.is_alive()
    monkeypatch.setattr(tm, 'take_samples', real_take)
    for rec in recs[8:10]:
        get.inputs = _with_ratios(rec['inputs'], pool, 500000, bump_epoch=3)
        m.tick(rec['mono'], rec['wall'])
    ps = m._tuner.settings.pools[pid]
    assert ps.mode == 'on' and ps.manual_change is None
    assert ps.last_applied == Ratios(0.5, 0.6, 0.8)


def test_the_promote_throttle_is_the_one_the_cache_pools_osds_get(burst, make_module):
    """Asked for plain `osd`, the mgr answers for osd.0, whatever its
    device class: a throttle set for the cache OSDs' class
    (`osd/class:ssd`) would be missed when osd.0 is a slow one."""

    from tiertune.topology import cache_tiers
    m, get = make_module(burst['samples'][0]['inputs'])
    tiers = cache_tiers(burst['samples'][0]['inputs']['osd_map'])
    (pid,) = tiers
    fast = {pid: dataclasses.replace(tiers[pid], crush_rule=1)}    # takes default~ssd
    asked = []

    def option(entity, key):
        asked.append(entity)
        return {'osd.0': 100.0}.get(entity, 1.0)

    # Two device classes' shadow roots, as `ceph osd crush dump` prints them.
    crush = {'buckets': [{'id': -2, 'name': 'default~ssd', 'items': [{'id': 1}, {'id': 0}]},
                         {'id': -5, 'name': 'default~hdd', 'items': [{'id': 3}, {'id': 2}]}],
             'rules': [{'rule_id': 1, 'steps': [{'op': 'take', 'item': -2}]},
                       {'rule_id': 3, 'steps': [{'op': 'take', 'item': -5}]}]}

    class Crush:
        def dump(self):
            return crush

    class OSDMap:
        def get_crush(self):
            return Crush()

    m._ceph_get_foreign_option = lambda entity, key: option(entity, key)
    m.get_osdmap = OSDMap
    every = {0, 1, 2, 3}
    limits = m._promote_limits(fast, every)[pid]
    assert (limits.max_objects_sec_per_osd, limits.osds) == (100.0, 2)
    assert set(asked) == {'osd.0'}              # the rule's first OSD, once per option
    slow = {pid: dataclasses.replace(tiers[pid], crush_rule=3)}
    assert m._promote_limits(slow, every)[pid].max_objects_sec_per_osd == 1.0
    assert asked[-1] == 'osd.2'
    # no such rule: plain `osd`, and every OSD up and in
    none = {pid: dataclasses.replace(tiers[pid], crush_rule=9)}
    limits = m._promote_limits(none, every)[pid]
    assert asked[-1] == 'osd' and limits.osds == 4
    # An OSD of the rule down or out throttles nothing; nor do more OSDs
    # than the pool has PGs (only primaries promote).
    assert m._promote_limits(fast, {0, 2, 3})[pid].osds == 1
    one_pg = {pid: dataclasses.replace(tiers[pid], crush_rule=1, pg_num=1)}
    assert m._promote_limits(one_pg, every)[pid].osds == 1


def test_a_ticks_change_is_in_the_store_before_its_first_command(burst, make_module,
                                                                  monkeypatch):
    """The tick stores its plan (the settings' `planned`) before the first
    `osd pool set`: a mgr that fails over part way through finds the plan,
    and takes the ratios it meets as tiertune's own, not a hand change."""

    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    assert m._cmd_mode(pool, 'on').retval == 0
    stored_at_each_set = []

    def pool_set(*args):
        stored_at_each_set.append(json.loads(m.get_store('state'))['pools'][str(pid)]['planned'])
    monkeypatch.setattr(m, '_pool_set', pool_set)
    m.tick(recs[6]['mono'], recs[6]['wall'])
    assert len(stored_at_each_set) == 3
    first = stored_at_each_set[0]
    assert first is not None and first['wall'] == recs[6]['wall']
    assert [ratios_from_dict(r) for r in first['path']][-1] == Ratios(0.2, 0.3, 0.9)
    assert json.loads(m.get_store('state'))['pools'][str(pid)]['planned'] is None   # done


def test_agent_op_limits_at_zero_hold_the_pool_and_raise_a_check(burst, make_module):
    # Seen on the local cluster: osd_agent_max_ops and osd_agent_max_low_ops
    # 0 (`ceph config set osd ...`), the cache filled, a write waited 10
    # minutes, and tiertune said only that client writes were idle.
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    last = burst['samples'][-1]
    m.tick(last['mono'] + 30, last['wall'] + 30)
    assert 'TIERTUNE_AGENT_STOPPED' not in m.health
    opts = type(m).foreign_options

    def set_and_tick(option, after_s):
        # Read every tick: `ceph config set` changes no OSD map.
        opts[('osd', option)] = 0
        m.tick(last['mono'] + after_s, last['wall'] + after_s)
        (detail,) = m.health['TIERTUNE_AGENT_STOPPED']['detail']
        return detail, json.loads(m._cmd_eval(pool, format='json').stdout)['decision']
    # One at 0: raised, and the law goes on (dirty_high starts the agent).
    detail, decision = set_and_tick('osd_agent_max_low_ops', 60)
    assert detail.startswith(f'pool {pool}: osd_agent_max_low_ops 0 for osd: the agent runs '
                             f'only while a PG of the OSD flushes HIGH')
    assert not any('may run no ops' in r for r in decision['reasons'])
    # Both at 0: held too.
    detail, decision = set_and_tick('osd_agent_max_ops', 90)
    assert detail.startswith(f'pool {pool}: osd_agent_max_ops 0 and osd_agent_max_low_ops 0 '
                             f'for osd in the config database')
    assert decision['action'] == 'hold'
    assert any('the tier agent of its OSDs may run no ops (osd_agent_max_ops 0 and '
               'osd_agent_max_low_ops 0 for osd)' in r for r in decision['reasons']), \
        decision['reasons']
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['agent_stopped'] == 'osd_agent_max_ops 0 and osd_agent_max_low_ops 0 for osd'
    assert m._tuner.views[next(iter(m._tiers))].decision.action == 'hold'
    opts.clear()
    m.tick(last['mono'] + 120, last['wall'] + 120)
    assert 'TIERTUNE_AGENT_STOPPED' not in m.health
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['agent_stopped'] is None and row['agent_limited'] is None


def test_a_tick_before_the_map_shows_its_own_last_change_holds(burst, make_module,
                                                                monkeypatch):
    """A tier without hit sets and min_interval_s 0 (nothing else waits): a
    tick a command wakes right after tiertune's own change, the OSD map not
    yet showing it, planned its next change from the ratios before it,
    sent only the ratios that differed from those, and recorded as set
    what the pool never had (found by a review helper)."""
    def no_hit_sets(inputs):
        out = copy.deepcopy(inputs)
        for p in out['osd_map']['pools']:
            if p['tier_of'] >= 0:
                p.update(hit_set_count=0, hit_set_period=0, hit_set_params={'type': 'none'})
        return out
    recs = [dict(r, inputs=no_hit_sets(r['inputs'])) for r in burst['samples']]
    m, get = run_ticks(make_module, recs)
    last = recs[-1]
    pool = burst['spec']['cache_pool']
    assert m._cmd_set(pool, 'min_interval_s', 0.0).retval == 0
    assert m._cmd_mode(pool, 'on').retval == 0
    sent = []
    m._pool_set = lambda pid, p, var, val: sent.append((var, val))
    from tiertune import controller
    from tiertune.topology import Ratios
    real = controller.decide
    want = [Ratios(0.2, 0.3, 0.9)]

    def decide(inp):        # the law asks for want[0], unless the pool holds
        d = real(inp)
        if d.action == 'hold':
            return d
        return dataclasses.replace(d, action='change', next=want[0], recommended=want[0],
                                   reasons=('test: forced',))
    monkeypatch.setattr(controller, 'decide', decide)
    m.tick(last['mono'] + 30, last['wall'] + 30)
    (pid,) = m._tiers
    assert sent, m._tuner.views[pid].decision.reasons
    sent.clear()
    want[0] = Ratios(0.3, 0.6, 0.8)
    # No osd_map notification yet: the tick has the map from before it.
    m.tick(last['mono'] + 30.5, last['wall'] + 30.5, woken=True)
    assert sent == []
    (pid,) = m._tiers
    view = m._tuner.views[pid]
    assert view.decision.action == 'hold'
    assert any("the OSD map does not show tiertune's last change yet" in r
               for r in view.decision.reasons), view.decision.reasons
    assert m._tuner.settings.pool(pid).last_applied == Ratios(0.2, 0.3, 0.9)


def test_changes_the_mon_keeps_refusing_raise_a_check(burst, make_module, monkeypatch):
    """Each refused change was only a history line ('failed: ... retry in
    960s'): status said `on`, no check was raised, and the pool kept its
    ratios for as long as the mon refused (found by a review helper)."""
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    assert m._cmd_mode(pool, 'on').retval == 0
    from tiertune.topology import Ratios
    force_change(monkeypatch, Ratios(0.2, 0.6, 0.8))
    refuse = [True]
    m._pool_set = lambda pid, p, var, val: 'Error EACCES: access denied' if refuse[0] else None
    last = burst['samples'][-1]
    for n in range(1, 4):
        assert 'TIERTUNE_CHANGE_REFUSED' not in m.health, n
        # Past each backoff (30 s, 60 s, 120 s): every tick tries once.
        m.tick(last['mono'] + 1000 * n, last['wall'] + 1000 * n)
    (detail,) = m.health['TIERTUNE_CHANGE_REFUSED']['detail']
    assert detail.startswith(f'pool {pool}: the mon refused its last 3 changes, since ')
    assert 'Error EACCES: access denied' in detail
    assert 'up to 16 min' in detail
    assert f'`ceph tiertune mode {pool} on` tries at once' in detail
    (pid,) = m._tiers
    # Only for a pool tiertune is to change: in warn it is not raised.
    assert m._cmd_mode(pool, 'warn').retval == 0
    m.tick(last['mono'] + 4000, last['wall'] + 4000)
    assert 'TIERTUNE_CHANGE_REFUSED' not in m.health
    # `on` again starts afresh: tried at once (no old backoff to wait out),
    # and counted from 1, not raised again with the old count.
    assert m._cmd_mode(pool, 'on').retval == 0
    m.tick(last['mono'] + 4001, last['wall'] + 4001)
    assert m._tuner.refusals[pid].count == 1
    assert 'TIERTUNE_CHANGE_REFUSED' not in m.health
    # Not kept for a pool set off (decide forgets it, as its failures).
    assert m._cmd_mode(pool, 'off').retval == 0
    m.tick(last['mono'] + 4100, last['wall'] + 4100)
    assert m._tuner.refusals == {}
    assert m._cmd_mode(pool, 'on').retval == 0
    m.tick(last['mono'] + 4200, last['wall'] + 4200)
    assert m._tuner.refusals[pid].count == 1
    # A change that goes through clears it.
    refuse[0] = False
    m.tick(last['mono'] + 5000, last['wall'] + 5000)
    assert 'TIERTUNE_CHANGE_REFUSED' not in m.health
    assert m._tuner.refusals == {}


def test_a_last_change_recorded_in_the_future_counts_from_the_next_tick(burst, make_module):
    # The mgr that made the change ran an hour ahead of the one that took
    # over: the rate limit counts from the takeover, not until the clocks
    # meet (an hour of holds before).
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:12])
    (pid,) = m._tiers
    assert m._cmd_mode('cache', 'on').retval == 0
    rec = recs[12]
    m._tuner.settings.pool(pid).last_change_wall = rec['wall'] + 3600
    m._save_settings_locked()
    m2 = restart(get)
    get.inputs = rec['inputs']
    m2.tick(rec['mono'], rec['wall'])
    assert m2._tuner.settings.pool(pid).last_change_wall == rec['wall']
    m3 = restart(get)      # and saved: a second failover keeps it
    m3.tick(rec['mono'] + 700, rec['wall'] + 700)
    numbers = m3._tuner.views[pid].decision.numbers
    assert numbers['since_last_change_s'] == pytest.approx(700)
    assert numbers['rate_limit_remaining_s'] == 0


def test_the_refusal_check_advises_a_retry_that_keeps_the_pool_following_the_default(
        burst, make_module, monkeypatch):
    # `mode <pool> on` for a pool that follows the default `on` pins it:
    # a later `mode off` would no longer stop it (found by a review helper).
    m, get = run_ticks(make_module, burst['samples'])
    pool = burst['spec']['cache_pool']
    assert m._cmd_mode('on').retval == 0
    from tiertune.topology import Ratios
    force_change(monkeypatch, Ratios(0.2, 0.6, 0.8))
    m._pool_set = lambda pid, p, var, val: 'Error EACCES: access denied'
    last = burst['samples'][-1]
    for n in range(1, 4):
        m.tick(last['mono'] + 1000 * n, last['wall'] + 1000 * n)
    (detail,) = m.health['TIERTUNE_CHANGE_REFUSED']['detail']
    assert f'`ceph tiertune mode {pool} default` tries at once' in detail
    (pid,) = m._tiers
    assert m._cmd_mode(pool, 'default').retval == 0
    assert pid not in m._tuner.refusals and pid not in m._tuner.retry_after
    assert m._cmd_mode('off').retval == 0
    assert m._tuner.settings.effective_mode(pid) == 'off'


def test_a_tick_a_command_fails_still_writes_the_samples_it_marked_saved(
        burst, make_module, monkeypatch):
    # An `osd pool set` that raised (not refused: an error the tick does not
    # expect) lost the tick's store writes, its samples marked saved all
    # the same: a failover then lost them (found by a review helper).
    from tiertune.module import SAMPLES_PREFIX
    from tiertune.topology import Ratios
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:-1])
    (pid,) = m._tiers
    assert m._cmd_mode('cache', 'on').retval == 0
    m.samples_save_interval = 0
    force_change(monkeypatch, Ratios(0.2, 0.6, 0.8))

    def lost_mon(pid, pool, var, val):
        raise RuntimeError('mon connection lost')
    m._pool_set = lost_mon
    get.inputs = recs[-1]['inputs']
    with pytest.raises(RuntimeError):
        m.tick(recs[-1]['mono'], recs[-1]['wall'])
    newest = m._book.get(pid).entries[-1].sample.wall
    stored = restart(get)
    stored._load(recs[-1]['mono'] + 30, recs[-1]['wall'] + 30)
    assert len(stored._book.get(pid)) == len(m._book.get(pid))
    assert stored._book.get(pid).entries[-1].sample.wall == pytest.approx(newest, abs=0.01)
    assert m.get_store(f'{SAMPLES_PREFIX}{pid}') is not None


def test_the_osds_filling_under_a_tier_keep_its_ratios_from_going_up(burst, make_module,
                                                                      monkeypatch):
    # The mon marks an OSD nearfull in the OSD map: every decision of the
    # pool is then made with no ratio to raise, and status says which OSDs
    # (the rule not readable here: any filling OSD counts).
    from tiertune import controller
    seen = []
    real = controller.decide
    monkeypatch.setattr(controller, 'decide', lambda inp: (seen.append(inp.no_raise),
                                                           real(inp))[1])
    recs = burst['samples']
    m, get = run_ticks(make_module, recs[:3])
    assert seen and set(seen) == {None}
    inputs = copy.deepcopy(recs[3]['inputs'])
    inputs['osd_map']['osds'] = [{'osd': 0, 'up': 1, 'in': 1, 'state': ['exists', 'up']},
                                 {'osd': 1, 'up': 1, 'in': 1,
                                  'state': ['exists', 'up', 'nearfull']}]
    get.inputs = inputs
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[3]['mono'], recs[3]['wall'])
    assert seen[-1] == 'OSDs of its CRUSH rule are filling (osd.1 nearfull)'
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['osds_filling'] == 'osd.1 nearfull'
    seen.clear()
    m._cmd_eval('cache')
    assert seen == ['OSDs of its CRUSH rule are filling (osd.1 nearfull)']
    # Unmarked in the next map: raises allowed again.
    inputs = copy.deepcopy(recs[4]['inputs'])
    inputs['osd_map']['osds'] = [{'osd': 1, 'up': 1, 'in': 1, 'state': ['exists', 'up']}]
    get.inputs = inputs
    m.notify(NotifyType.osd_map, '')
    m.tick(recs[4]['mono'], recs[4]['wall'])
    assert seen[-1] is None
    (row,) = json.loads(m._cmd_status(format='json').stdout)['pools']
    assert row['osds_filling'] is None


@pytest.mark.parametrize('fields, cell', [({}, 'bloom 4x60s'),
                                          ({'hit_set_count': 0}, 'none (bloom 0x60s)'),
                                          ({'hit_set_period': 0}, 'none (bloom 4x0s)')])
def test_the_status_table_says_none_for_a_pool_that_keeps_no_hit_sets(burst, make_module,
                                                                       fields, cell):
    # A count or period of 0 disables the PGs' hit sets whatever the type
    # (seen on the demo: `hit_set_count 0` showed as `bloom 0x60s`).
    inputs = copy.deepcopy(burst['samples'][0]['inputs'])
    (cache,) = [p for p in inputs['osd_map']['pools'] if p['cache_mode'] != 'none']
    cache.update(fields)
    m, get = make_module(inputs)
    m.tick(burst['samples'][0]['mono'], burst['samples'][0]['wall'])
    header, row = m._cmd_status().stdout.splitlines()[:2]
    at = header.index('HIT SET')
    assert row[at:].startswith(cell + '  ')


def test_a_change_the_mon_set_on_another_pool_stops_and_is_recorded_failed(
        burst, make_module, monkeypatch):
    """`osd pool set` names the pool, so a rename and another tier given the
    old name between the map read and the commands send them to that other
    pool.  The mon's reply names the pool it set by id: the first command
    that went elsewhere is the last sent, and the change is recorded as
    failed, not as ratios the pool now has."""
    from mgr_module import HandleCommandResult

    from tiertune.topology import Ratios
    recs = burst['samples']
    pool = burst['spec']['cache_pool']
    m, get = run_ticks(make_module, recs[:6])
    (pid,) = m._tiers
    sent = []

    def mon(cmd, inbuf=None):
        sent.append(cmd)
        return HandleCommandResult(0, '', f"set pool {pid + 7} {cmd['var']} to {cmd['val']}")
    monkeypatch.setattr(m, 'check_mon_command', mon)
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    assert m._cmd_mode(pool, 'on').retval == 0
    before = m._tiers[pid].ratios
    m.tick(recs[6]['mono'], recs[6]['wall'])
    assert [c['pool'] for c in sent] == [pool]           # three planned, one sent
    rec = list(m._tuner.history(pid))[-1]
    assert rec.result.startswith('failed: osd pool set') and f'pool {pid + 7}' in rec.result
    # Nothing of the change counts as the pool's own ratios.
    assert m._tuner.settings.pools[pid].last_applied in (None, before)
    # Said in the cluster's audit log: that other pool's ratio changed.
    assert any(line.startswith('audit: ') and f'the mon set pool {pid + 7}' in line
               for line in m.cluster_log_lines)
