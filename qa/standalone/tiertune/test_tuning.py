"""Tuning on a real cluster: warn recommends, on acts within bounds, state
survives a mgr failover, reset restores, a new idle tier is not taken for a
read cache until clients read from it.  One scenario, in order: each test
builds on the one before (pytest runs a file's tests in order)."""

import errno
import itertools
import json
import subprocess
import time

import pytest

from conftest import TICK_S, WORKUNITS, cache_row, fail_over, wait_row

POOL = 'cache'
BASELINE = {'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8}
# Test knobs: a low floor so the drain is clear, one step to reach it, no
# minimum interval of our own (the pool's hit_set_period, 60 s, still applies).
# dirty_high_ratio_min at its default: the mgr parses 0.3 as
# 0.30000000000000004, which tiertune must store and show as 0.3.
TEST_SETTINGS = [('dirty_ratio_min', '0.05'), ('max_step', '0.4'), ('min_interval_s', '0'),
                 ('dirty_high_ratio_min', '0.3')]


def tt(c, *args, check=True):
    return c.ceph('tiertune', *args, check=check)


def tt_json(c, *args):
    return json.loads(tt(c, *args, '--format', 'json').stdout)


def pool_ratios(c, pool=POOL):
    # `osd pool get` prints the ratios through a float: 0.4000000059604645
    d = c.ceph_json('osd', 'pool', 'get', pool, 'all')
    return {'dirty': round(d['cache_target_dirty_ratio'], 4),
            'dirty_high': round(d['cache_target_dirty_high_ratio'], 4),
            'full': round(d['cache_target_full_ratio'], 4)}


def wait(what, pred, timeout, interval=2.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f'timed out after {timeout}s waiting for {what} (last: {last!r})')


def test_default_mode_is_warn(cluster):
    assert tt_json(cluster, 'status')['mode'] == 'warn'
    assert cache_row(cluster)['autotune']['mode'] == 'warn'


@pytest.mark.parametrize('args,code', [
    (('set', POOL, 'dirty_ratio_min', '1.5'), errno.EINVAL),
    (('set', POOL, 'dirty_ratio_min', '0.7'), errno.EINVAL),          # above its max 0.6
    (('set', POOL, 'dirty_high_ratio_min', '0.95'), errno.EINVAL),    # ordering impossible
    (('set', POOL, 'deadband', '0.01'), errno.EINVAL),                # inside osd_agent_slop
    (('set', POOL, 'bogus', '0.5'), errno.EINVAL),
    (('set', 'no-such-pool', 'max_step', '0.2'), errno.ENOENT),
    (('set', 'base', 'max_step', '0.2'), errno.EINVAL),               # not a cache tier
    (('mode', POOL, 'sideways'), errno.EINVAL),
    (('mode', 'sideways'), errno.EINVAL),
    (('mode', 'default'), errno.EINVAL),                              # a pool's only
    (('mode', 'no-such-pool', 'on'), errno.ENOENT),
    (('eval', 'no-such-pool'), errno.ENOENT),
    (('reset', 'base'), errno.EINVAL),
])
def test_bad_input_is_refused_and_changes_nothing(cluster, args, code):
    before = cache_row(cluster)['autotune']
    p = tt(cluster, *args, check=False)
    assert p.returncode == code, p.stderr
    assert p.stderr.strip()
    after = cache_row(cluster)['autotune']
    assert after['bounds'] == before['bounds'] and after['knobs'] == before['knobs']
    assert after['mode'] == before['mode']


def test_set_bounds_and_knobs(cluster):
    for key, value in TEST_SETTINGS:
        out = json.loads(tt(cluster, 'set', POOL, key, value, '--format', 'json').stdout)
        both = {**out['bounds'], **out['knobs']}
        assert both[key] == float(value)
    at = cache_row(cluster)['autotune']
    assert at['bounds']['dirty_ratio_min'] == 0.05 and at['knobs']['max_step'] == 0.4
    assert at['bounds']['dirty_high_ratio_min'] == 0.3


def test_burst_then_warn_recommends_without_changing(cluster):
    assert pool_ratios(cluster) == BASELINE
    burst = subprocess.run([str(WORKUNITS / 'overwrite_burst.sh'), 'base', '200',
                            str(1 << 20), '16', 'tuning-test'],
                           env=cluster.env, capture_output=True, text=True, timeout=600)
    assert burst.returncode == 0, burst.stderr
    wait('dirty data from the burst', lambda: cache_row(cluster)['bytes']['dirty'] > (16 << 20),
         120)

    def lower_recommended():
        e = tt_json(cluster, 'eval', POOL) if tt(cluster, 'eval', POOL, check=False) \
            .returncode == 0 else None
        if e and e['decision']['recommended']['dirty'] < BASELINE['dirty']:
            return e
        return None
    e = wait('eval to recommend a lower dirty ratio (clients idle)', lower_recommended, 600, 5)
    rec = e['decision']['recommended']
    assert 0.05 <= rec['dirty'] <= rec['dirty_high'] <= rec['full'] <= 0.9
    assert e['decision']['reasons'], 'a recommendation says why'
    assert e['model']['fitted'] is True
    # the promote gate reads the throttle from the mon's config database and
    # counts the OSDs of the cache pool's CRUSH rule (the fast ones only)
    s = cluster.spec
    assert e['model']['promote']['throttle_ops_sec'] == \
        s.promote_max_objects_sec * s.fast_osds
    # warn never changes the pool, and records no applied decision
    time.sleep(3 * TICK_S)
    assert pool_ratios(cluster) == BASELINE
    assert not [h for h in tt_json(cluster, 'history', POOL)['history']
                if h['result'] == 'applied']
    # status shows the recommendation.  Not necessarily at every tick: PGs
    # report the burst's stats in pieces, and a late piece reads as inflow
    # (seen: state 'burst' a few ticks after eval had seen idle), so wait
    # for it, and say what tiertune decided if it never comes.
    try:
        wait_row(cluster, 'status to recommend a lower dirty ratio',
                 lambda row: row['recommended']['dirty'] < BASELINE['dirty'], 60)
    except AssertionError as e:
        later = tt_json(cluster, 'eval', POOL)
        pytest.fail(f"{e}; eval now: {json.dumps(later['decision'], default=str)[:3000]} "
                    f"inflow {later['model']['inflow']}")
    assert pool_ratios(cluster) == BASELINE


def test_on_mode_lowers_dirty_ratio_within_bounds_and_dirty_drains(cluster):
    dirty_before = cache_row(cluster)['bytes']['dirty']
    assert dirty_before > 0
    tt(cluster, 'mode', POOL, 'on')
    r = wait('tiertune to lower the dirty ratio',
             lambda: (lambda r: r if r['dirty'] < BASELINE['dirty'] else None)(
                 pool_ratios(cluster)), 120)
    assert 0.05 <= r['dirty'] <= r['dirty_high'] <= r['full']
    wait('dirty bytes to drain', lambda: cache_row(cluster)['bytes']['dirty'] < dirty_before / 2,
         300, 3)

    def drain_event():
        p = cluster.ceph_json('progress', 'json')
        return [e for e in p.get('events', []) + p.get('completed', [])
                if 'tiertune: draining dirty data of cache pool cache' in e.get('message', '')]
    wait('a progress event for the drain', drain_event, 60)
    applied = [h for h in tt_json(cluster, 'history', POOL)['history'] if h['result'] == 'applied']
    assert applied and applied[-1]['new']['dirty'] == pytest.approx(r['dirty'], abs=1e-6)
    # The law may move full too (the hit curve decides it), in the same
    # change or an earlier one: each change starts where the one before
    # left the pool, the first from the baseline, and says why.
    rounded = [({k: round(v, 4) for k, v in h['old'].items()},
                {k: round(v, 4) for k, v in h['new'].items()}) for h in applied]
    assert rounded[0][0] == BASELINE
    for (_, prev_new), (old, _) in itertools.pairwise(rounded):
        assert old == prev_new
    for _, new in rounded:
        assert 0.05 <= new['dirty'] <= new['dirty_high'] <= new['full'] <= 0.9
    assert all(h['reason'] for h in applied)
    # the change and its reason reached the cluster's audit log
    audit = (cluster.log_dir / 'cluster.log').read_text(errors='replace')
    assert 'tiertune: pool cache: 0.40/0.60/0.80 ->' in audit


def test_mgr_failover_keeps_bounds_modes_history_and_samples(cluster):
    # samples written to the store every tick (the default is every 300 s)
    cluster.ceph('config', 'set', 'mgr', 'mgr/tiertune/samples_save_interval', '0')
    time.sleep(3 * TICK_S)
    row = cache_row(cluster)
    before = row['autotune']
    hist = tt_json(cluster, 'history', POOL)['history']
    fail_over(cluster)
    new_row = cache_row(cluster)
    after = new_row['autotune']
    for key in ('mode', 'bounds', 'knobs', 'baseline', 'last_applied', 'last_change_time'):
        assert after[key] == before[key], key
    # the new mgr goes on from the old one's samples (a fresh history would
    # hold only the few ticks since it took over); those older than the
    # window (history_size ticks, 240 s here) are left out
    assert row['samples'] > 40
    assert new_row['samples'] >= row['samples'] // 2
    assert tt_json(cluster, 'history', POOL)['history'] == hist
    # it does not repeat (or undo) the change: within the rate limit, nothing new
    time.sleep(4 * TICK_S)
    assert tt_json(cluster, 'history', POOL)['history'] == hist


def test_reset_restores_the_baseline_and_returns_to_warn(cluster):
    out = json.loads(tt(cluster, 'reset', POOL, '--format', 'json').stdout)
    assert out['pool'] == POOL
    assert pool_ratios(cluster) == BASELINE
    assert cache_row(cluster)['autotune']['mode'] == 'warn'
    time.sleep(3 * TICK_S)
    assert pool_ratios(cluster) == BASELINE
    assert tt_json(cluster, 'history', POOL)['history'][-1]['result'] == 'reset'


def test_a_ratio_set_by_hand_while_on_is_respected_not_fought(cluster):
    """An operator's `osd pool set` on a pool in on mode: tiertune sets the
    pool to warn and leaves the hand-set value; `mode <pool> on` again takes
    it as tiertune's own, rather than sending the pool back to warn."""
    tt(cluster, 'mode', POOL, 'on')
    time.sleep(3 * TICK_S)        # on: the ratios now are tiertune's (it may move them)
    cluster.ceph('osd', 'pool', 'set', POOL, 'cache_target_dirty_high_ratio', '0.55')
    row = wait_row(cluster, 'the pool to go to warn after a hand change',
                   lambda row: row['autotune']['mode'] == 'warn', 60)
    assert 'changed outside tiertune' in row['autotune']['manual_change']
    # plain status says why the pool is in warn, under the table
    assert f'pool {POOL}: ratios changed outside tiertune' in tt(cluster, 'status').stdout
    time.sleep(3 * TICK_S)
    assert pool_ratios(cluster)['dirty_high'] == 0.55
    audit = (cluster.log_dir / 'cluster.log').read_text(errors='replace')
    assert 'tiertune: pool cache: ratios changed outside tiertune' in audit
    tt(cluster, 'mode', POOL, 'on')
    time.sleep(3 * TICK_S)
    row = cache_row(cluster)
    assert row['autotune']['mode'] == 'on' and row['autotune']['manual_change'] is None
    assert 'changed outside tiertune' not in tt(cluster, 'status').stdout
    # The pool's own mode outlives the default's changes until dropped.
    out = tt_json(cluster, 'mode', 'warn')
    assert out['pools_with_own_mode'] == [{'pool': POOL, 'mode': 'on'}]
    assert cache_row(cluster)['autotune']['mode'] == 'on'
    out = tt_json(cluster, 'mode', POOL, 'default')
    assert (out['mode'], out['pool_mode']) == ('warn', None)
    row = cache_row(cluster)
    assert (row['autotune']['mode'], row['autotune']['pool_mode']) == ('warn', None)


NEW_BASE, NEW_CACHE = 'base-new', 'cache-new'


def test_a_new_idle_tier_keeps_full_until_clients_read_from_it(cluster):
    """Enabling tiertune on a tier no client has used: the idle drain may
    lower dirty, but full stays where the operator set it (a first write
    surge must not meet it raised); once clients read from the tier and
    write nothing, it is a read cache and full goes to its ceiling."""
    from localcluster.cluster import FAST_RULE, SLOW_RULE
    c = cluster
    c.create_pool(NEW_BASE, 8, SLOW_RULE)
    c.create_pool(NEW_CACHE, 8, FAST_RULE)
    try:
        # objects for the readers, written before the overlay (straight to the base)
        c.run(['rados', '-p', NEW_BASE, 'bench', '5', 'write', '-b', str(1 << 20), '-t', '4',
               '--no-cleanup'], timeout=180)
        c.ceph('osd', 'tier', 'add', NEW_BASE, NEW_CACHE)
        c.ceph('osd', 'tier', 'cache-mode', NEW_CACHE, 'writeback')
        c.ceph('osd', 'tier', 'set-overlay', NEW_BASE, NEW_CACHE)
        # a short hit_set_period: it is the rate limit between two changes
        for var, val in (('hit_set_type', 'bloom'), ('hit_set_count', '2'),
                         ('hit_set_period', '10'), ('target_max_bytes', str(128 << 20)),
                         ('min_read_recency_for_promote', '1')):
            c.ceph('osd', 'pool', 'set', NEW_CACHE, var, val)
        c.wait_clean()
        assert pool_ratios(c, NEW_CACHE) == BASELINE
        tt(c, 'set', NEW_CACHE, 'min_interval_s', '0')
        tt(c, 'mode', NEW_CACHE, 'on')

        def fitted():
            p = tt(c, 'eval', NEW_CACHE, '--format', 'json', check=False)
            e = json.loads(p.stdout) if p.returncode == 0 else None
            return e if e and e['model']['fitted'] else None
        e = wait('a fitted model of the idle tier', fitted, 240, TICK_S)
        assert e['model']['hits']['hit_ratio'] is None      # no client op yet
        assert e['decision']['numbers']['read_cache'] is False
        assert e['decision']['recommended']['full'] == BASELINE['full']
        time.sleep(3 * TICK_S)
        assert pool_ratios(c, NEW_CACHE)['full'] == BASELINE['full']

        # clients read (rados bench's random reads, through the overlay)
        c.run(['rados', '-p', NEW_BASE, 'bench', '30', 'rand', '-t', '4'], timeout=240)

        def read_cache_full():
            r = pool_ratios(c, NEW_CACHE)
            return r if r['full'] > BASELINE['full'] else None
        r = wait('full raised for a read cache', read_cache_full, 120, TICK_S)
        assert r['full'] == pytest.approx(0.9)       # full_ratio_max, the default bound
        raised = [h for h in tt_json(c, 'history', NEW_CACHE)['history']
                  if h['result'] == 'applied' and h['new']['full'] > h['old']['full']]
        assert raised and 'a read cache' in raised[-1]['reason']
    finally:
        tt(c, 'mode', NEW_CACHE, 'off', check=False)
        c.run(['rados', '-p', NEW_CACHE, 'cache-flush-evict-all'], check=False)
        c.ceph('osd', 'tier', 'remove-overlay', NEW_BASE, check=False)
        c.ceph('osd', 'tier', 'rm', NEW_BASE, NEW_CACHE, check=False)
        for pool in (NEW_CACHE, NEW_BASE):
            c.ceph('osd', 'pool', 'rm', pool, pool, '--yes-i-really-really-mean-it',
                   check=False)


def test_the_mons_reply_to_osd_pool_set_names_the_pool_set_by_id(cluster):
    """tiertune checks that the mon set the pool its change was for: the
    command can only name the pool, and a rename plus another tier given
    the old name would send it elsewhere.  The check reads the pool's id
    from the mon's reply, in this form (tiertune.actuation.SET_REPLY; a
    unit test holds the parser to the same text).  The value set is the
    pool's own: nothing changes."""
    (pid,) = [p['pool_id'] for p in cluster.ceph_json('osd', 'pool', 'ls', 'detail')
              if p['pool_name'] == POOL]
    d = cluster.ceph_json('osd', 'pool', 'get', POOL, 'cache_target_dirty_ratio')
    value = f"{d['cache_target_dirty_ratio']:.6f}"
    out = cluster.ceph('osd', 'pool', 'set', POOL, 'cache_target_dirty_ratio', value)
    assert out.stderr.strip() == f'set pool {pid} cache_target_dirty_ratio to {value}'
