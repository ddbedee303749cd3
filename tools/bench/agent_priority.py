#!/usr/bin/python3
"""Which PGs the OSD agent flushes first, on a real local cluster.

The OSD's agent_queue is keyed by evict effort, and agent_choose_mode
says it uses that key "as a proxy for *all* agent effort (including
flush)": a PG that only flushes sits at level 0, and the OSD serves its
highest level first.  If so, a PG that evicts takes its OSD's in-flight
flush ops before the flush-only PGs on the same OSD get any.  If not,
the OSD's flushes spread over its flushing PGs.  This tells which.

On a fresh cluster (tools/localcluster; a 1 GiB target over 8 PGs, so 32
objects of 4 MiB per PG, no hit sets, no tiertune):
  1. ratios held off (0.9/0.95/0.99) and cache_min_evict_age an hour, so
     nothing is evicted outside FULL mode and a PG keeps its fill while it
     flushes;
  2. on each cache OSD, one PG it is primary for (the "evicting" PG) gets
     EVICTING_OBJECTS dirty objects, every other PG FLUSH_ONLY_OBJECTS:
     object names are picked by their PG (`osd map`);
  3. dirty 0.01, dirty_high 0.99 (LOW), full 0.6: the evicting PGs (fill
     ~0.8) are in evict mode SOME at effort 0.5, the rest (fill ~0.5) are
     evict IDLE, at level 0;
  4. every SAMPLE_S, each PG's dirty objects (`pg ls-by-pool`) until none
     is dirty or WINDOW_S passes.
Served by level, an OSD's evicting PG drains first and its flush-only PGs
wait; spread evenly, the flush-only PGs (fewer objects each) drain first.
Per OSD it prints the dirty objects of both groups over time, and what the
flush-only PGs had flushed when the evicting PG had flushed half of its
own and when it was done.

usage: tools/bench/agent_priority.py [--dir DIR] [--json FILE]
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import rados  # noqa: E402  (the Debian python3-rados binding, as the mgr has it)
from agent_pacing import HELD_OFF, set_ratios, write_objects  # noqa: E402
from cluster_backend import cache_osds, ls_by_pool_stats  # noqa: E402

from localcluster import ClusterSpec, LocalCluster  # noqa: E402

TARGET = 1 << 30                  # 32 objects of 4 MiB per PG
PG_NUM = 8
EVICTING_OBJECTS = 26             # fill ~0.81: over full 0.6, effort (0.81-0.6)/0.4 -> 0.5
FLUSH_ONLY_OBJECTS = 16           # fill ~0.5: under full 0.6 less its slop
SAMPLE_S = 1.0
WINDOW_S = 180.0
RUN = ('0.01', '0.99', '0.6')     # dirty, dirty_high, full while measuring
MIN_EVICT_AGE_S = 3600


def _pg_of(cl: 'rados.Rados', pool: str, name: str) -> Tuple[str, int]:
    ret, out, err = cl.mon_command(json.dumps({'prefix': 'osd map', 'pool': pool,
                                               'object': name, 'format': 'json'}), b'')
    if ret != 0:
        raise RuntimeError(f'osd map {pool} {name}: {err}')
    m = json.loads(out)
    return str(m['pgid']), int(m['acting_primary'])


def _names_by_pg(cl: 'rados.Rados', pool: str, want: Dict[str, int]) -> Dict[str, List[str]]:
    """Object names, `want[pgid]` of them per PG."""
    got: Dict[str, List[str]] = {pg: [] for pg in want}
    i = 0
    while any(len(got[pg]) < n for pg, n in want.items()):
        name = f'prio-{i}'
        i += 1
        pg, _ = _pg_of(cl, pool, name)
        if pg in got and len(got[pg]) < want[pg]:
            got[pg].append(name)
    return got


def _primaries(c: LocalCluster) -> Dict[str, int]:
    return {str(p['pgid']): int(p['acting_primary'])
            for p in _pg_stats(c)}


def _pg_stats(c: LocalCluster) -> List[Dict[str, Any]]:
    return ls_by_pool_stats(c.ceph_json('pg', 'ls-by-pool', c.spec.cache_pool))


def _dirty_by_pg(c: LocalCluster) -> Dict[str, int]:
    return {str(p['pgid']): int(p['stat_sum'].get('num_objects_dirty', 0)) for p in _pg_stats(c)}


def run(workdir: Path) -> Dict[str, Any]:
    spec = ClusterSpec().with_overrides({
        'target_max_bytes': str(TARGET), 'cache_pg_num': str(PG_NUM), 'hit_set_count': '0',
        'hit_set_period': '0', 'dirty_ratio': HELD_OFF[0], 'dirty_high_ratio': HELD_OFF[1],
        'full_ratio': HELD_OFF[2], 'min_evict_age': str(MIN_EVICT_AGE_S),
        'bench_seconds': '0', 'enable_modules': ''})
    c = LocalCluster(workdir, spec)
    try:
        c.start()
        osds = cache_osds(c)
        primary = _primaries(c)
        evicting = {osd: min(pg for pg, p in primary.items() if p == osd)
                    for osd in osds if any(p == osd for p in primary.values())}
        want = {pg: EVICTING_OBJECTS if pg in evicting.values() else FLUSH_ONLY_OBJECTS
                for pg in primary}
        cl = rados.Rados(conffile=str(c.conf))
        cl.connect()
        try:
            names = _names_by_pg(cl, spec.cache_pool, want)
        finally:
            cl.shutdown()
        write_objects(c, [n for pg in names for n in names[pg]])
        c.wait_for('every PG reporting its dirty objects',
                   lambda: _dirty_by_pg(c) == {pg: want[pg] for pg in want},
                   timeout=120, interval=1.0)
        # The full ratio last (set_ratios' order).  Set first, the evicting
        # PGs are queued with nothing they may do (evictions too young,
        # flushing off), and a pass that starts nothing delays them for
        # osd_agent_delay_time (5 s: the second run in agent-priority.md);
        # set last, every PG flushes at level 0 for the second between the
        # two commands.
        set_ratios(c, *RUN)
        t0 = time.monotonic()
        samples: List[Dict[str, Any]] = []
        while time.monotonic() - t0 < WINDOW_S:
            samples.append({'t': time.monotonic() - t0, 'dirty': _dirty_by_pg(c)})
            if not any(samples[-1]['dirty'].values()):
                break
            time.sleep(SAMPLE_S)
        return {'primary': primary, 'evicting': {str(k): v for k, v in evicting.items()},
                'objects': want, 'run': RUN, 'samples': samples}
    finally:
        c.stop()


def _first(samples: Sequence[Dict[str, Any]], pg: str, at_most: int) -> Optional[int]:
    for k, s in enumerate(samples):
        if s['dirty'][pg] <= at_most:
            return k
    return None


def report(r: Dict[str, Any]) -> str:
    primary, samples, objects = r['primary'], r['samples'], r['objects']
    lines = [f'ratios while measured (dirty, dirty_high, full): {", ".join(r["run"])}; '
             f'{EVICTING_OBJECTS} dirty objects in each evicting PG, {FLUSH_ONLY_OBJECTS} in '
             f'each flush-only PG']
    for osd, pg in sorted(r['evicting'].items()):
        others = sorted(p for p, o in primary.items() if str(o) == osd and p != pg)
        total = sum(objects[p] for p in others)
        lines.append(f'osd.{osd}: evicting PG {pg}, flush-only PGs {", ".join(others)}')
        lines.append('      t  evicting dirty  flush-only dirty')
        lines += [f'  {s["t"]:5.1f}  {s["dirty"][pg]:14d}  {sum(s["dirty"][p] for p in others):16d}'
                  for s in samples]
        for label, left in (('half of its own', objects[pg] // 2), ('all of its own', 0)):
            k = _first(samples, pg, left)
            if k is None:
                lines.append(f'  the evicting PG had not flushed {label} in {WINDOW_S:.0f} s')
                continue
            done = total - sum(samples[k]['dirty'][p] for p in others)
            flushed = objects[pg] - samples[k]['dirty'][pg]
            lines.append(f'  when the evicting PG had flushed {label} ({flushed} objects, '
                         f'{samples[k]["t"]:.0f} s): the flush-only PGs had flushed {done} of '
                         f'{total} (spread evenly: {min(total, flushed * len(others))})')
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dir', type=Path, default=None, help='where the cluster runs')
    ap.add_argument('--json', type=Path, default=None, help='also write the samples here')
    args = ap.parse_args(argv)
    r = run(args.dir or Path(tempfile.mkdtemp(prefix='agent-priority-')))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    print(report(r), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
