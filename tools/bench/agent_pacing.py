#!/usr/bin/python3
"""How many clean objects the OSD agent evicts per flush it completes, on a
real local cluster, by the PGs' clean share and the flush mode.

The simulator paces eviction by flush completions with one constant (2 per
flush, measured once in a burst under Ceph's defaults).  A reading of
OSDService::agent_entry and PrimaryLogPG::agent_work says the number
depends on the mix: after each flush completion the agent walks the PG's
objects, evicting the clean ones it meets, until it starts the next flush;
flushing LOW it may start osd_agent_max_ops - osd_agent_max_low_ops (2)
more from the 10 objects it listed.  This measures it.

For each dirty share asked for, on a fresh cluster (tools/localcluster;
a 1 GiB target over 8 PGs, no hit sets, no tiertune):
  1. ratios held off (0.9/0.95/0.99), write the clean part's objects, flush
     them all (dirty ratio 0) and wait until none is dirty;
  2. ratios held off again, write the dirty part's objects;
  3. set dirty 0.01, full 0.05 (the PGs evict; without hit sets every clean
     object passes the temperature test) and dirty_high 0.99 (they flush
     LOW) or, with --high, 0.02 (HIGH); then read the cache OSDs' counters
     (cluster_backend.osd_perf) every SAMPLE_S for WINDOW_S or until the
     clean objects are gone: tier_clean (flushes completed) and tier_evict.
Per sampling interval it prints the clean share at the interval's start
(objects written, less those evicted, plus those flushed clean) and the
evictions and flush completions in it; per share, the totals over the
intervals whose clean share stayed within SHARE_SPAN of the start's.

usage: tools/bench/agent_pacing.py [--dirty-shares 0.1,0.3,0.5,0.7]
                                   [--objects 200] [--high] [--dir DIR]
                                   [--json FILE]
"""

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import rados  # noqa: E402  (the Debian python3-rados binding, as the mgr has it)
from cluster_backend import cache_osds, osd_perf  # noqa: E402

from localcluster import ClusterSpec, LocalCluster  # noqa: E402

MiB = 1 << 20
OBJECT = 4 * MiB
TARGET = 1 << 30                  # 256 objects of 4 MiB
PG_NUM = 8
SAMPLE_S = 0.25
WINDOW_S = 30.0
# Intervals count towards a share's total while its clean share is within
# this of where it started (the agent empties the clean part as it goes).
SHARE_SPAN = 0.1
HELD_OFF = ('0.9', '0.95', '0.99')
COUNTERS = ('tier_clean', 'tier_evict', 'agent_flush', 'agent_wake', 'agent_skip')


@dataclass(frozen=True)
class Interval:
    t0: float
    t1: float
    clean_share: float        # at t0
    flushed: float            # flushes completed in the interval
    evicted: float


def intervals(clean: int, dirty: int, samples: Sequence[Dict[str, float]]) -> List[Interval]:
    """The sampling intervals of one share: samples are cumulative counters
    since the agent was set going, each with its time 't'."""
    out = []
    prev = {'t': 0.0, 'tier_clean': 0.0, 'tier_evict': 0.0}
    for s in samples:
        held_clean = clean + prev['tier_clean'] - prev['tier_evict']
        held_dirty = dirty - prev['tier_clean']
        held = held_clean + held_dirty
        out.append(Interval(prev['t'], s['t'], held_clean / held if held > 0 else 0.0,
                            s['tier_clean'] - prev['tier_clean'],
                            s['tier_evict'] - prev['tier_evict']))
        prev = s
    return out


def evicts_per_flush(ivs: Sequence[Interval]) -> Optional[float]:
    """Evictions per completed flush over the intervals whose clean share is
    within SHARE_SPAN of the first's; None if no flush completed."""
    if not ivs:
        return None
    kept = [iv for iv in ivs if abs(iv.clean_share - ivs[0].clean_share) <= SHARE_SPAN]
    flushed = sum(iv.flushed for iv in kept)
    return sum(iv.evicted for iv in kept) / flushed if flushed > 0 else None


def set_ratios(c: LocalCluster, dirty: str, high: str, full: str) -> None:
    """dirty_high, dirty, then full: one `osd pool set` each."""
    for var, val in (('cache_target_dirty_high_ratio', high), ('cache_target_dirty_ratio', dirty),
                     ('cache_target_full_ratio', full)):
        c.ceph('osd', 'pool', 'set', c.spec.cache_pool, var, val)


def dirty_objects(c: LocalCluster) -> int:
    for p in c.ceph_json('df', 'detail')['pools']:
        if p['name'] == c.spec.cache_pool:
            return int(p['stats'].get('dirty', 0))
    raise KeyError(c.spec.cache_pool)


def write_objects(c: LocalCluster, names: Sequence[str], size: int = OBJECT) -> None:
    """One object of size bytes per name, all in flight at once."""
    cl = rados.Rados(conffile=str(c.conf))
    cl.connect()
    try:
        io = cl.open_ioctx(c.spec.base_pool)    # through the overlay, into the cache
        data = b'\xa5' * size
        for comp in [io.aio_write_full(name, data) for name in names]:
            comp.wait_for_complete()
        io.close()
    finally:
        cl.shutdown()


def held_off_spec(target: int = TARGET) -> ClusterSpec:
    """A tier of PG_NUM PGs and the target, no hit sets, no tiertune, the
    ratios held off: the agent does nothing until the run sets them."""
    return ClusterSpec().with_overrides({
        'target_max_bytes': str(target), 'cache_pg_num': str(PG_NUM), 'hit_set_count': '0',
        'hit_set_period': '0', 'dirty_ratio': HELD_OFF[0], 'dirty_high_ratio': HELD_OFF[1],
        'full_ratio': HELD_OFF[2], 'bench_seconds': '0', 'enable_modules': ''})


def print_runs(runs: Iterable[Dict[str, Any]], report: Callable[[Dict[str, Any]], str],
               json_path: Optional[Path]) -> None:
    """Each run's report as it ends, and all runs so far to json_path."""
    done: List[Dict[str, Any]] = []
    for run in runs:
        done.append(run)
        print(report(run), flush=True)
        if json_path:
            json_path.write_text(json.dumps(done, indent=1))


def one_share(workdir: Path, dirty_share: float, objects: int, high: bool) -> Dict[str, Any]:
    c = LocalCluster(workdir, held_off_spec())
    try:
        c.start()
        dirty = int(round(objects * dirty_share))
        clean = objects - dirty
        write_objects(c, [f'clean-{i}' for i in range(clean)])
        set_ratios(c, '0', HELD_OFF[1], HELD_OFF[2])
        c.wait_for('the clean part flushed', lambda: dirty_objects(c) == 0, timeout=600,
                   interval=2.0)
        set_ratios(c, *HELD_OFF)
        write_objects(c, [f'dirty-{i}' for i in range(dirty)])
        osds = cache_osds(c)
        start = osd_perf(c, osds, COUNTERS)
        set_ratios(c, '0.01', '0.02' if high else '0.99', '0.05')
        t0 = time.monotonic()
        samples: List[Dict[str, float]] = []
        while time.monotonic() - t0 < WINDOW_S:
            now = osd_perf(c, osds, COUNTERS)
            samples.append({'t': time.monotonic() - t0,
                            **{k: float(now[k] - start[k]) for k in now}})
            if samples[-1]['tier_evict'] >= clean + samples[-1]['tier_clean']:
                break
            time.sleep(SAMPLE_S)
        return {'dirty_share': dirty_share, 'high': high, 'clean': clean, 'dirty': dirty,
                'samples': samples}
    finally:
        c.stop()


def report(run: Dict[str, Any]) -> str:
    ivs = intervals(run['clean'], run['dirty'], run['samples'])
    mode = 'HIGH' if run['high'] else 'LOW'
    lines = [f'dirty share {run["dirty_share"]:.2f}, flushing {mode}: '
             f'{run["clean"]} clean and {run["dirty"]} dirty objects',
             '   t from..to  clean share  flushes  evictions']
    lines += [f'  {iv.t0:5.2f}..{iv.t1:5.2f}  {iv.clean_share:11.2f}  {iv.flushed:7.0f}  '
              f'{iv.evicted:9.0f}' for iv in ivs]
    if not ivs:
        return '\n'.join([*lines, '  no samples'])
    ratio = evicts_per_flush(ivs)
    lines.append(f'  evictions per completed flush while the clean share was within '
                 f'{SHARE_SPAN} of {ivs[0].clean_share:.2f}: '
                 + ('no flush completed' if ratio is None else f'{ratio:.2f}'))
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dirty-shares', default='0.1,0.3,0.5,0.7')
    ap.add_argument('--objects', type=int, default=200,
                    help='objects in the cache when the agent starts (256 fill the target)')
    ap.add_argument('--high', action='store_true', help='flush HIGH (dirty_high 0.02), not LOW')
    ap.add_argument('--dir', type=Path, default=None, help='where the clusters run')
    ap.add_argument('--json', type=Path, default=None, help='also write the samples here')
    args = ap.parse_args(argv)
    base = args.dir or Path(tempfile.mkdtemp(prefix='agent-pacing-'))
    shares = [float(s) for s in args.dirty_shares.split(',')]
    print_runs((one_share(base / f'share-{k}', share, args.objects, args.high)
                for k, share in enumerate(shares)), report, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
