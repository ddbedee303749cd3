"""Cluster states in which the tier agent cannot act on the ratios, or the
figures mislead: tiertune holds and says why, on a real cluster."""

import time

from conftest import status, wait_row

SPLIT_BASE, SPLIT_CACHE = 'splitbase', 'splitcache'


def reasons(row):
    return row['decision']['reasons']


def test_a_paused_cluster_and_a_full_base_are_held(cluster, tmp_path):
    """`ceph osd pause` stops client IO (the pool reads idle, and is not);
    a base over its quota takes neither flushes nor writes through the
    tier.  Both hold, and the hold goes with them."""
    paused = "the pausewr flag is set: client writes and the agent's flushes wait"
    cluster.ceph('osd', 'pause')
    try:
        row = wait_row(cluster, 'the tick to hold for the pause', lambda r: paused in reasons(r))
        assert row['decision']['action'] == 'hold'
    finally:
        cluster.ceph('osd', 'unpause')
    wait_row(cluster, 'the hold to go with the pause', lambda r: paused not in reasons(r))

    base = cluster.spec.base_pool
    full = f'base pool {base} is full (quota or OSDs): flushes cannot land'
    filler = tmp_path / 'filler'
    filler.write_bytes(b'x' * 4096)
    # One object in the base at least (a new object's write is proxied to it).
    cluster.run(['rados', '-p', base, 'put', 'quota-filler', str(filler)])
    try:
        cluster.ceph('osd', 'pool', 'set-quota', base, 'max_objects', '1')
        try:
            row = wait_row(cluster, 'the tick to hold for the full base',
                           lambda r: any(x.startswith(full) for x in reasons(r)))
            assert row['decision']['action'] == 'hold'
        finally:
            cluster.ceph('osd', 'pool', 'set-quota', base, 'max_objects', '0')
        wait_row(cluster, 'the hold to go with the quota',
                 lambda r: not any(x.startswith(full) for x in reasons(r)))
    finally:
        cluster.run(['rados', '-p', base, 'rm', 'quota-filler'], check=False)


def split_row(c):
    rows = [r for r in status(c)['pools'] if r['pool'] == SPLIT_CACHE]
    return rows[0] if rows else None


def tiertune_check(c, name):
    return c.ceph_json('health', 'detail').get('checks', {}).get(name)


def test_a_split_cache_pool_is_held_and_raised_until_its_pgs_are_scrubbed(cluster):
    """After a split each PG's stats are invalid until it is scrubbed, and
    the OSD's tier agent neither flushes nor evicts on it meanwhile (seen
    on 16.2.15: 123 dirty objects over a 0.4 dirty ratio, no flush in
    40 s).  With scrubs held off (noscrub), tiertune holds the pool and
    raises TIERTUNE_SPLIT_UNSCRUBBED; `osd pool scrub` clears both.  A
    tier of its own, so the other tests keep their PG counts."""
    c = cluster
    for pool in (SPLIT_BASE, SPLIT_CACHE):
        c.ceph('osd', 'pool', 'create', pool, '2', '2', '--autoscale-mode=off')
    c.ceph('osd', 'tier', 'add', SPLIT_BASE, SPLIT_CACHE)
    c.ceph('osd', 'tier', 'cache-mode', SPLIT_CACHE, 'writeback')
    c.ceph('osd', 'tier', 'set-overlay', SPLIT_BASE, SPLIT_CACHE)
    c.ceph('osd', 'pool', 'set', SPLIT_CACHE, 'target_max_bytes', str(64 << 20))
    c.ceph('osd', 'set', 'noscrub')
    try:
        c.wait_for('tiertune to see the new tier', lambda: split_row(c) is not None, 60)
        assert tiertune_check(c, 'TIERTUNE_SPLIT_UNSCRUBBED') is None
        # Ceph's own guard on cache pools: it takes the split only when told to.
        c.ceph('osd', 'pool', 'set', SPLIT_CACHE, 'pg_num', '4', '--yes-i-really-mean-it')
        # The count and the decision on it (status takes them under one
        # lock each: a tick may come between).
        row = c.wait_for('the split PGs read as unscrubbed, and held for',
                         lambda: (r := split_row(c)) is not None and r['invalid_stats_pgs'] > 0
                         and any('have had no scrub since a PG split' in x for x in reasons(r))
                         and r, 120)
        assert row['decision']['action'] == 'hold'
        check = c.wait_for('TIERTUNE_SPLIT_UNSCRUBBED',
                           lambda: tiertune_check(c, 'TIERTUNE_SPLIT_UNSCRUBBED'), 60)
        assert any(d['message'].startswith(f'pool {SPLIT_CACHE}: ')
                   and d['message'].endswith(f'(ceph osd pool scrub {SPLIT_CACHE})')
                   for d in check['detail'])
        # Still there a while later: nothing scrubs them while noscrub is set.
        time.sleep(10)
        assert split_row(c)['invalid_stats_pgs'] > 0
        c.ceph('osd', 'pool', 'scrub', SPLIT_CACHE)
        c.wait_for('the scrubbed pool to be tuned again',
                   lambda: (r := split_row(c)) is not None and r['invalid_stats_pgs'] == 0
                   and not any('scrub' in x for x in reasons(r)), 180)
        c.wait_for('TIERTUNE_SPLIT_UNSCRUBBED to clear',
                   lambda: tiertune_check(c, 'TIERTUNE_SPLIT_UNSCRUBBED') is None, 60)
    finally:
        c.ceph('osd', 'unset', 'noscrub')
        c.ceph('osd', 'tier', 'remove-overlay', SPLIT_BASE, check=False)
        c.ceph('osd', 'tier', 'remove', SPLIT_BASE, SPLIT_CACHE, check=False)
        for pool in (SPLIT_CACHE, SPLIT_BASE):
            c.ceph('osd', 'pool', 'delete', pool, pool, '--yes-i-really-really-mean-it',
                   check=False)
    c.wait_for('tiertune to drop the removed tier', lambda: split_row(c) is None, 60)


def test_agent_op_limits_at_zero_are_held_and_raised(cluster):
    """osd_agent_max_ops and osd_agent_max_low_ops at 0 in the config
    database leave the OSDs' tier agent no ops to run: seen here, the cache
    filled, a PG went FULL and a write waited ten minutes while tiertune
    said only that client writes were idle, and Ceph raised no check for
    the cause.  The pool holds and TIERTUNE_AGENT_STOPPED names it; both go
    when the settings do.  Read every tick: `ceph config set` changes no
    OSD map."""
    held = ('the tier agent of its OSDs may run no ops (osd_agent_max_ops 0 and '
            'osd_agent_max_low_ops 0 for osd.')
    options = ('osd_agent_max_ops', 'osd_agent_max_low_ops')
    try:
        for name in options:
            cluster.ceph('config', 'set', 'osd', name, '0')
        row = wait_row(cluster, 'the tick to hold for the stopped agent',
                       lambda r: any(x.startswith(held) for x in reasons(r)))
        assert row['decision']['action'] == 'hold'
        assert row['agent_stopped'].startswith(
            'osd_agent_max_ops 0 and osd_agent_max_low_ops 0 for osd.')
        # The mgr reports its modules' checks to the mon every few seconds.
        check = wait_for('TIERTUNE_AGENT_STOPPED',
                         lambda: tiertune_check(cluster, 'TIERTUNE_AGENT_STOPPED'))
        assert check['detail'][0]['message'].startswith(
            f'pool {cluster.spec.cache_pool}: osd_agent_max_ops 0 and osd_agent_max_low_ops 0 '
            f'for osd.')
    finally:
        for name in options:
            cluster.ceph('config', 'rm', 'osd', name)
    wait_row(cluster, 'the hold to go with the settings',
             lambda r: not any(x.startswith(held) for x in reasons(r)))
    wait_for('TIERTUNE_AGENT_STOPPED to clear',
             lambda: tiertune_check(cluster, 'TIERTUNE_AGENT_STOPPED') is None)


def wait_for(what, pred, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        assert time.monotonic() < deadline, f'timed out after {timeout}s waiting for {what}'
        time.sleep(2)


def test_osds_filling_under_the_cache_are_named_and_no_ratio_is_raised(cluster, tmp_path):
    """The mon marks OSDs nearfull by their use against the nearfull ratio
    (set here far below what any OSD holds): tiertune names those of the
    cache pool's CRUSH rule, not the base's, and raises no ratio while
    they fill; the mark and the name go together."""
    def classes(cls):
        return {int(i) for i in cluster.ceph_json('osd', 'crush', 'class', 'ls-osd', cls)}

    def marked():
        return {o['osd']: o['state'] for o in cluster.ceph_json('osd', 'dump')['osds']}

    def named(row):
        return {int(part.split()[0][len('osd.'):]) for part in row['osds_filling'].split(', ')}

    fast = classes('ssd') if cluster.spec.fast_osds else classes('hdd')
    # Data on every cache OSD: writes through the overlay land in the cache.
    blob = tmp_path / 'blob'
    blob.write_bytes(b'y' * (1 << 20))
    names = [f'nearfull-{i}' for i in range(16)]
    for name in names:
        cluster.run(['rados', '-p', cluster.spec.base_pool, 'put', name, str(blob)])
    was = cluster.ceph_json('osd', 'dump')['nearfull_ratio']
    cluster.ceph('osd', 'set-nearfull-ratio', '0.0001')
    try:
        # The OSDs that hold anything are marked, the base's among them.
        wait_for('a cache OSD and a base OSD marked nearfull', lambda: (
            {i for i, s in marked().items() if 'nearfull' in s} - fast
            and {i for i, s in marked().items() if 'nearfull' in s} & fast))
        # The marks come an OSD at a time: the name follows each map.
        row = wait_row(cluster, 'the tick to name the marked cache OSDs, only those',
                       lambda r: r['osds_filling'] is not None and named(r) == (
                           {i for i, s in marked().items() if 'nearfull' in s} & fast))
        assert named(row) <= fast
        assert all(part.endswith(' nearfull') for part in row['osds_filling'].split(', '))
        nxt, now = row['decision']['next'], row['ratios']
        assert all(nxt[k] <= now[k] + 1e-9 for k in ('dirty', 'dirty_high', 'full')), row
    finally:
        cluster.ceph('osd', 'set-nearfull-ratio', str(was))
        for name in names:
            cluster.run(['rados', '-p', cluster.spec.base_pool, 'rm', name], check=False)
    wait_row(cluster, 'the name to go with the mark', lambda r: r['osds_filling'] is None)
