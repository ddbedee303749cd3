#!/usr/bin/python3
"""What a tiertune tick costs inside a real ceph-mgr, as cache pools grow.

module_cost.py times the module on a stub mgr with synthetic state: it can
reach 1,000 pools and 100,000 PGs, but leaves out the mgr's own C++ work
to build get('pool_stats') for Python.  This runs the real module in a
real ceph-mgr (tools/localcluster, memstore OSDs) and reads the figures
the module reports about itself (`tiertune status`: the serve thread's
CPU time per tick, time.thread_time, the median of the last 20 ticks, and
of its costly steps: sampling pool_stats, the history, the models and law,
health and progress, the store).

For each count in --steps it adds writeback cache tiers (a base pool and a
cache pool of --pg-num PGs each, bloom hit sets, a target_max_bytes) until
there are that many, waits until every cache pool's history holds
--history samples (sleep_interval --interval s, so the fill takes
interval x history seconds), then waits --ticks more ticks and reads the
figures.  By default the pools are idle: no client IO (the models then
find no runs of writes, a little less work than under load;
module_cost.py advances every pool's counters instead).  --load-ops N
writes instead, from one thread of this process through the rados
binding, N ops/s of 256 KiB spread round-robin over the tiers' base
pools (so through each overlay), in bursts of --load-period seconds
separated by as long a pause, over 8 keys per pool, with a 4 MiB target
and dirty ratio 0.1 (the keys stay cached; the agent flushes them, writes
dirty them again): the models then fit runs of writes, as on a busy
cluster (--load-ops 192 over 64 tiers is 3 writes/s a pool, three times
their idle floor).  PGs are few: the tick reads no per-PG data.  Pool
creation goes through the rados binding's mon_command (one `ceph`
process per command would take minutes for 64 tiers).

--pinning measures each step four times over: the daemons and this
process sharing the machine's CPUs (as they do otherwise), then the
active mgr on a CPU of its own and everything else (mon, OSDs, the load)
on the others, then shared and pinned once more, the same length each
(--ticks), so the machine's drift from minute to minute shows in the
pairs (cpu_placement.py).  --idle-first, with --load-ops, measures the
pools idle before the load starts, then waits until the histories hold
only loaded samples (history x interval) and measures under load.

--pools N then adds plain pools (one PG each, no tier) until the cluster
has N pools in all, the manager's own included, and measures once more:
the same cache pools, with the mgr's pool_stats now covering every pool,
tier or not (about two seconds a pool to create).

usage: tools/bench/mgr_tick_cost.py [--steps 1,64] [--pools N] [--interval 2] [--history 120]
                                    [--ticks 20] [--pg-num 1] [--load-ops N] [--load-period S]
                                    [--idle-first] [--pinning] [--dir DIR] [--json FILE]
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cpu_placement  # noqa: E402
import machine_speed  # noqa: E402
import rados  # noqa: E402  (the Debian python3-rados binding, as the mgr has it)

from localcluster import ClusterSpec, LocalCluster  # noqa: E402
from localcluster.cluster import FAST_RULE  # noqa: E402

MiB = 1 << 20
TARGET_MAX_BYTES = 64 * MiB
# The target under --load-ops: twice the load's keys (LOAD_KEYS_PER_POOL);
# a low dirty ratio, so that the agent flushes about as fast as clients
# write (tiertune is in warn mode: it does not move them).
LOAD_TARGET_MAX_BYTES = 4 * MiB
LOAD_RATIOS = (('cache_target_dirty_ratio', '0.1'), ('cache_target_dirty_high_ratio', '0.3'))


def tier_commands(i: int, pg_num: int, target: int = TARGET_MAX_BYTES,
                  ratios: Tuple[Tuple[str, str], ...] = ()) -> List[Dict[str, Any]]:
    """The mon commands that make writeback tier number i, in order."""
    base, cache = f'base{i}', f'cache{i}'
    cmds: List[Dict[str, Any]] = []
    for pool in (base, cache):
        cmds += [{'prefix': 'osd pool create', 'pool': pool, 'pg_num': pg_num,
                  'pgp_num': pg_num, 'pool_type': 'replicated', 'rule': FAST_RULE,
                  'autoscale_mode': 'off'},
                 {'prefix': 'osd pool application enable', 'pool': pool, 'app': 'rados'}]
    cmds += [{'prefix': 'osd tier add', 'pool': base, 'tierpool': cache},
             {'prefix': 'osd tier cache-mode', 'pool': cache, 'mode': 'writeback'},
             {'prefix': 'osd tier set-overlay', 'pool': base, 'overlaypool': cache}]
    for var, val in (('hit_set_type', 'bloom'), ('hit_set_count', '4'),
                     ('hit_set_period', '60'), ('target_max_bytes', str(target)),
                     *ratios):
        cmds.append({'prefix': 'osd pool set', 'pool': cache, 'var': var, 'val': val})
    return cmds


def plain_pool_commands(i: int) -> List[Dict[str, Any]]:
    """The mon commands that make plain pool number i: one PG, no tier."""
    pool = f'plain{i}'
    return [{'prefix': 'osd pool create', 'pool': pool, 'pg_num': 1, 'pgp_num': 1,
             'pool_type': 'replicated', 'rule': FAST_RULE, 'autoscale_mode': 'off'},
            {'prefix': 'osd pool application enable', 'pool': pool, 'app': 'rados'}]


def mon_commands(c: LocalCluster, cmds: Iterable[Dict[str, Any]]) -> None:
    cl = rados.Rados(conffile=str(c.conf))
    cl.connect()
    try:
        for cmd in cmds:
            ret, _, err = cl.mon_command(json.dumps(cmd), b'', timeout=60)
            if ret != 0:
                raise RuntimeError(f'{cmd["prefix"]} ({cmd.get("pool")}): {ret} {err}')
    finally:
        cl.shutdown()


def add_tiers(c: LocalCluster, first: int, last: int, pg_num: int,
              target: int = TARGET_MAX_BYTES, ratios: Tuple[Tuple[str, str], ...] = ()) -> None:
    mon_commands(c, (cmd for i in range(first, last)
                     for cmd in tier_commands(i, pg_num, target, ratios)))


def add_plain_pools(c: LocalCluster, first: int, last: int) -> None:
    mon_commands(c, (cmd for i in range(first, last) for cmd in plain_pool_commands(i)))


# Sized so that the load keeps every model busy (see --load-ops): each
# pool's keys (8 of 256 KiB, 2 MiB) fit in half its target, so after its
# first write (proxied to the base, then promoted clean) a key stays
# cached and every write lands in the cache; over the dirty ratio (0.1:
# LOAD_RATIOS) the agent flushes, the next write dirties the object
# again, and the pool's inflow (dirty growth plus flushes) is about what
# is written: at 3 writes/s a pool, three times the models' idle floor
# (256 KiB/s).
LOAD_OBJECT_BYTES = 256 * 1024
LOAD_KEYS_PER_POOL = 8
LOAD_IN_FLIGHT = 16


class Load:
    """Writes to the tiers' base pools from one thread (see --load-ops):
    ops_per_s ops/s while on, on and off for period_s each, asynchronous
    (at most LOAD_IN_FLIGHT at once), round-robin over the pools."""

    def __init__(self, c: LocalCluster, ops_per_s: float, period_s: float) -> None:
        self._conf, self._ops, self._period = str(c.conf), ops_per_s, period_s
        self._pools: List[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.written = 0

    def start(self, tiers: int) -> None:
        self._pools = [f'base{i}' for i in range(tiers)]
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def _run(self) -> None:
        cl = rados.Rados(conffile=self._conf)
        cl.connect()
        data = b'x' * LOAD_OBJECT_BYTES
        ioctxs: Dict[str, Any] = {}
        in_flight: Deque[Any] = deque()
        t0, k = time.monotonic(), 0
        try:
            while not self._stop.is_set():
                now = time.monotonic() - t0
                if int(now // self._period) % 2:     # the pause between bursts
                    self._stop.wait(self._period - now % self._period)
                    continue
                pools = self._pools     # replaced whole by start(), never changed
                pool = pools[k % len(pools)]
                if pool not in ioctxs:
                    ioctxs[pool] = cl.open_ioctx(pool)
                key = f'load{(k // len(pools)) % LOAD_KEYS_PER_POOL}'
                in_flight.append(ioctxs[pool].aio_write_full(key, data))
                if len(in_flight) >= LOAD_IN_FLIGHT:
                    in_flight.popleft().wait_for_complete()
                k += 1
                self.written += 1
                # Paced, not a closed loop: at most ops_per_s.
                self._stop.wait(1.0 / self._ops)
            for comp in in_flight:
                comp.wait_for_complete()
        finally:
            for io in ioctxs.values():
                io.close()
            cl.shutdown()


def tiertune_status(c: LocalCluster) -> Dict[str, Any]:
    return json.loads(c.ceph('tiertune', 'status', '--format', 'json').stdout)


def wait_filled(c: LocalCluster, pools: int, history: int, interval: float) -> None:
    def filled() -> bool:
        rows = tiertune_status(c)['pools']
        return len(rows) == pools and all(r['samples'] >= history for r in rows)
    c.wait_for(f'{pools} cache pools with {history} samples each', filled,
               timeout=history * interval * 3 + 120, interval=5.0)


def read_ticks(c: LocalCluster, pools: int, ticks: int, interval: float) -> Dict[str, Any]:
    """The figures of the next `ticks` ticks (status keeps the last 20)."""
    time.sleep(ticks * interval + interval)
    tick = tiertune_status(c)['tick']
    assert tick['cache_pools'] == pools, tick
    return {'cache_pools': pools, 'pools': pool_count(c), **tick}


# --pinning's four measurements, in order: shared, pinned, shared, pinned.
PLACEMENTS = ('shared', 'mgr on its own CPU') * 2


def measure(c: LocalCluster, pools: int, history: int, ticks: int, interval: float,
            pinning: bool, annotate: Callable[[Dict[str, Any]], None]) -> List[Dict[str, Any]]:
    """Once every history is full, the next ticks' figures; with --pinning
    those of each placement in turn.  Each row is annotated, then printed."""
    wait_filled(c, pools, history, interval)

    def read(placement: Optional[str] = None) -> Dict[str, Any]:
        # The machine's speed just before and after the ticks read (see
        # machine_speed): rows of different hours compare only beside it.
        before = machine_speed.reference_ms()
        row = read_ticks(c, pools, ticks, interval)
        row['reference_ms'] = [before, machine_speed.reference_ms()]
        if placement is not None:
            row['placement'] = placement
        annotate(row)
        print_progress(row)
        return row
    if not pinning:
        return [read()]
    cpus = os.sched_getaffinity(0)
    mgr = [int(c.state['pids'][f'mgr.{c.active_mgr()}'])]
    rest = [int(pid) for name, pid in c.state['pids'].items() if int(pid) not in mgr]
    rest.append(os.getpid())
    rows = []
    try:
        for placement in PLACEMENTS:
            if placement == 'shared':
                cpu_placement.share(mgr + rest, cpus)
            else:
                cpu_placement.split(mgr, rest, cpus)
            rows.append(read(placement))
    finally:
        cpu_placement.share(mgr + rest, cpus)
    return rows


def pool_count(c: LocalCluster) -> int:
    """Every pool the mgr's pool_stats covers, the manager's own included."""
    return len(c.ceph_json('osd', 'pool', 'ls'))


# A local cluster for the tick's cost: fast OSDs only, no tier of its own
# (the bench makes them), no start-up bench.
CLUSTER_OVERRIDES = {'slow_osds': '0', 'make_tier': 'false', 'bench_seconds': '0'}


def start_cluster(c: LocalCluster, interval: float, history: int) -> None:
    """Start c with tiertune sampling every interval s, history samples kept."""
    c.start()
    for key, val in (('sleep_interval', interval), ('history_size', history)):
        c.ceph('config', 'set', 'mgr', f'mgr/tiertune/{key}', str(int(val)))


def run(workdir: Path, steps: List[int], interval: float, history: int, ticks: int,
        pg_num: int, pools: int = 0, load_ops: float = 0.0,
        load_period: float = 20.0, idle_first: bool = False,
        pinning: bool = False) -> List[Dict[str, Any]]:
    c = LocalCluster(workdir, ClusterSpec().with_overrides(CLUSTER_OVERRIDES))
    rows: List[Dict[str, Any]] = []
    load = Load(c, load_ops, load_period) if load_ops > 0 else None
    target, ratios = ((LOAD_TARGET_MAX_BYTES, LOAD_RATIOS) if load is not None
                      else (TARGET_MAX_BYTES, ()))

    def step(n: int, io: str) -> None:
        def annotate(row: Dict[str, Any]) -> None:
            row['io'] = io
            if load is not None and io == 'load':
                row['load_ops_written'] = load.written
        rows.extend(measure(c, n, history, ticks, interval, pinning, annotate))

    try:
        start_cluster(c, interval, history)
        have = 0
        for n in steps:
            add_tiers(c, have, n, pg_num, target, ratios)
            have = n
            c.wait_clean(timeout=300)
            if load is not None and idle_first:
                step(n, 'idle')
                load.start(n)
                # Until every sample in the histories was taken under load.
                time.sleep(history * interval)
            elif load is not None:
                load.start(n)
            step(n, 'idle' if load is None else 'load')
        existing = pool_count(c)
        if pools > existing:
            add_plain_pools(c, 0, pools - existing)
            c.wait_clean(timeout=600)
            step(have, 'idle' if load is None else 'load')
    finally:
        if load is not None:
            load.stop()
        c.stop()
    return rows


def print_progress(row: Dict[str, Any]) -> None:
    print((f'[{row["placement"]}] ' if 'placement' in row else '') +
          f'{row["cache_pools"]:>5} cache pools of {row["pools"]}: tick CPU '
          f'{row["cpu_ms_median"]:.2f} ms median of {row["ticks"]} (max {row["cpu_ms_max"]:.2f}), '
          f'last wall {row["wall_ms_last"]:.2f} ms'
          + (f'; {row["load_ops_written"]} writes so far' if 'load_ops_written' in row else ''),
          flush=True)


def table(rows: List[Dict[str, Any]]) -> str:
    """The rows as the printed table; IO and CPUS columns when a run has
    more than one kind (--idle-first, --pinning)."""
    io = len({r.get('io') for r in rows}) > 1
    cpus = any('placement' in r for r in rows)
    lines = [f'{"CACHE POOLS":>11} {"POOLS":>6} '
             + (f'{"IO":<5} ' if io else '') + (f'{"CPUS":<18} ' if cpus else '')
             + f'{"CPU MS (MEDIAN)":>16} {"MAX":>7} {"WALL MS (LAST)":>15} {"REF MS":>9}'
               f'  MEDIAN MS BY STEP']
    for r in rows:
        by_step = ', '.join(f'{k} {v:.2f}' for k, v in r.get('cpu_ms_median_parts', {}).items())
        lines.append(f'{r["cache_pools"]:>11} {r["pools"]:>6} '
                     + (f'{r.get("io", ""):<5} ' if io else '')
                     + (f'{r.get("placement", "shared"):<18} ' if cpus else '')
                     + f'{r["cpu_ms_median"]:>16.2f} {r["cpu_ms_max"]:>7.2f} '
                     f'{r["wall_ms_last"]:>15.2f} {_reference(r):>9}  {by_step}')
    return '\n'.join(lines)


def _reference(row: Dict[str, Any]) -> str:
    """The row's reference loops, before/after its ticks (rows from
    JSON written before they were kept have none)."""
    ref = row.get('reference_ms')
    return '-' if not ref else '/'.join(f'{v:.0f}' for v in ref)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--steps', default='1,64', help='cache pool counts, ascending')
    ap.add_argument('--pools', type=int, default=0,
                    help='then add plain pools up to this many pools in all, and measure again')
    ap.add_argument('--interval', type=int, default=2, help='sleep_interval, seconds')
    ap.add_argument('--history', type=int, default=120, help='history_size')
    ap.add_argument('--ticks', type=int, default=20)
    ap.add_argument('--pg-num', type=int, default=1)
    ap.add_argument('--load-ops', type=float, default=0.0,
                    help='client writes per second over all tiers while on (0: idle pools)')
    ap.add_argument('--load-period', type=float, default=20.0,
                    help='seconds of writes, then as many of pause, with --load-ops')
    ap.add_argument('--idle-first', action='store_true',
                    help='with --load-ops: measure the idle pools first, then under load')
    ap.add_argument('--pinning', action='store_true',
                    help='measure each step shared, with the mgr on a CPU of its own, '
                         'shared and pinned again')
    ap.add_argument('--dir', type=Path, help='cluster directory (default: a new temporary one)')
    ap.add_argument('--json', type=Path, help='also write the rows here')
    args = ap.parse_args(argv)
    steps = [int(x) for x in args.steps.split(',')]
    if steps != sorted(set(steps)) or steps[0] < 1:
        ap.error('--steps: ascending counts of at least 1')
    if args.idle_first and not args.load_ops:
        ap.error('--idle-first: only with --load-ops')
    if args.pinning and len(os.sched_getaffinity(0)) < 2:
        ap.error('--pinning: needs two CPUs at least')
    if args.pools and args.pools <= 2 * steps[-1]:
        ap.error(f'--pools: more than the {2 * steps[-1]} pools the tiers make')
    workdir = args.dir or Path(tempfile.mkdtemp(prefix='tiertune-mgr-tick-'))
    rows = run(workdir, steps, args.interval, args.history, args.ticks, args.pg_num,
               args.pools, args.load_ops, args.load_period, args.idle_first, args.pinning)
    io = (f'{args.load_ops:g} writes/s of {LOAD_OBJECT_BYTES >> 10} KiB over the tiers '
          f'({LOAD_TARGET_MAX_BYTES // MiB} MiB targets), '
          f'{args.load_period:g} s on and off'
          if args.load_ops > 0 else 'idle pools')
    if args.idle_first:
        io = f'idle pools, then {io}'
    print(f'real ceph-mgr, tiertune ticks every {args.interval} s, {args.history} samples per '
          f'pool, {args.pg_num} PG(s) per pool, {io}; CPU of the serve thread per tick; '
          f'REF MS: the machine\'s speed, a {machine_speed.REFERENCE_LOOP:,}-iteration Python '
          f'loop in this process before/after the row\'s ticks')
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
