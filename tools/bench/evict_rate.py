#!/usr/bin/python3
"""How fast the OSD agent evicts clean objects when it has nothing to flush,
on a real local cluster.

The simulator evicts, while an OSD has no flush in flight,
EVICT_OBJECTS_PER_S_PER_OSD objects a second (simulator/tier.py), times
the effort where the pool has hit sets; until session 22 that constant
was assumed, and this measured it.  Without flushes nothing paces
OSDService::agent_entry: it calls PrimaryLogPG::agent_work on its top PG
again as soon as the last call returns, and each call evicts up to
osd_agent_max_ops objects of the ones it lists.  Without hit sets every
clean object passes agent_maybe_evict's temperature test whatever the
effort (all temperatures are 0, so the position test never refuses), so
the effort should not slow it there.

For each full ratio asked for, on a fresh cluster (tools/localcluster; a
target of --target-mib (1 GiB unless told) over 8 PGs, no hit sets, no
tiertune):
  1. ratios held off (0.9/0.95/0.99), write the objects, flush them all
     (dirty ratio 0) and wait until none is dirty;
  2. set full to the ratio asked for (dirty held off: nothing to flush),
     and read the cache OSDs' counters (cluster_backend.osd_perf) every
     SAMPLE_S for WINDOW_S or until the agent has evicted nothing for
     STILL_S: tier_evict (objects evicted), agent_wake (agent_work calls)
     and tier_delay (passes over a PG that started nothing, after which
     the agent leaves the PG for osd_agent_delay_time, 5 s), in total and
     per OSD.
It prints each sample and two rates per cache OSD, both lower bounds: from
the full ratio set to the last eviction (it includes the time the new OSD
map takes to reach the OSDs, one to two seconds here), and between the
last sample that saw no eviction and the first that saw them all (the
agent under way; the samples are half a second apart, so a run should
take several).

usage: tools/bench/evict_rate.py [--object-kib 64] [--objects 15000] [--target-mib 1024]
                                 [--full 0.05,0.6] [--dir DIR] [--json FILE]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from agent_pacing import (  # noqa: E402
    HELD_OFF,
    TARGET,
    dirty_objects,
    held_off_spec,
    print_runs,
    set_ratios,
    write_objects,
)
from cluster_backend import cache_osds, osd_perf  # noqa: E402

from localcluster import LocalCluster  # noqa: E402

KiB = 1 << 10
SAMPLE_S = 0.25
WINDOW_S = 60.0
# The agent has stopped when nothing was evicted for this long: longer than
# osd_agent_delay_time (5 s), the agent's pause after a pass over a PG
# that started nothing.
STILL_S = 8.0
COUNTERS = ('tier_evict', 'agent_wake', 'tier_delay', 'tier_clean')
# Of the memstore OSDs' bytes, what the objects may take: below the OSDs'
# nearfull ratio, with room for their metadata.
MEMSTORE_USABLE = 0.8


def _all_evicted(samples: Sequence[Dict[str, float]]) -> Optional[Tuple[float, float]]:
    """The evictions of the run and the time of the first sample that saw
    them all; None if nothing was evicted."""
    final = max((s['tier_evict'] for s in samples), default=0.0)
    if final <= 0:
        return None
    return final, min(s['t'] for s in samples if s['tier_evict'] >= final)


def evict_rate(samples: Sequence[Dict[str, float]], osds: int) -> Optional[float]:
    """Evictions a second per OSD from the start to the sample that saw the
    last eviction; None if nothing was evicted."""
    seen = _all_evicted(samples)
    if seen is None or seen[1] <= 0:
        return None
    return seen[0] / seen[1] / max(osds, 1)


def running_rate(samples: Sequence[Dict[str, float]], osds: int) -> Optional[float]:
    """Evictions a second per OSD between the last sample that saw none (or
    the ratio set) and the first that saw them all: all of them happened in
    that span, so a lower bound on the agent's rate under way that leaves
    out the map's delay up to that sample; None if nothing was evicted."""
    seen = _all_evicted(samples)
    if seen is None:
        return None
    final, end = seen
    start = max((s['t'] for s in samples if s['tier_evict'] <= 0), default=0.0)
    return final / (end - start) / max(osds, 1) if end > start else None


def sample(t: float, start: Dict[int, Dict[str, int]],
           now: Dict[int, Dict[str, int]]) -> Dict[str, Any]:
    """One sample: the counters since the start, summed over the OSDs, and
    each OSD's evictions and delays (osd order), which tell an OSD that
    started late from one whose agent paused."""
    osds = sorted(now)
    out: Dict[str, Any] = {'t': t}
    for k in COUNTERS:
        out[k] = float(sum(now[o][k] - start[o][k] for o in osds))
    out['evict_by_osd'] = [float(now[o]['tier_evict'] - start[o]['tier_evict']) for o in osds]
    out['delay_by_osd'] = [float(now[o]['tier_delay'] - start[o]['tier_delay']) for o in osds]
    return out


def one_run(workdir: Path, full: float, objects: int, size: int,
            target: int = TARGET) -> Dict[str, Any]:
    spec = held_off_spec(target)
    room = spec.fast_osds * spec.memstore_bytes * MEMSTORE_USABLE
    if objects * size > room:
        # The memstore OSDs would fill and block the writes for good.
        raise SystemExit(f'{objects} objects of {size >> 10} KiB exceed what the cache OSDs '
                         f'hold here ({int(room) >> 20} MiB)')
    c = LocalCluster(workdir, spec)
    try:
        c.start()
        write_objects(c, [f'clean-{i}' for i in range(objects)], size)
        set_ratios(c, '0', HELD_OFF[1], HELD_OFF[2])
        c.wait_for('the objects flushed', lambda: dirty_objects(c) == 0, timeout=900,
                   interval=2.0)
        osds = cache_osds(c)
        start = {o: osd_perf(c, [o], COUNTERS) for o in osds}
        c.ceph('osd', 'pool', 'set', c.spec.cache_pool, 'cache_target_dirty_ratio', HELD_OFF[0])
        t0 = time.monotonic()
        c.ceph('osd', 'pool', 'set', c.spec.cache_pool, 'cache_target_full_ratio', f'{full:g}')
        samples: List[Dict[str, float]] = []
        moved_at = 0.0
        while time.monotonic() - t0 < WINDOW_S:
            now = {o: osd_perf(c, [o], COUNTERS) for o in osds}
            samples.append(sample(time.monotonic() - t0, start, now))
            if len(samples) < 2 or samples[-1]['tier_evict'] > samples[-2]['tier_evict']:
                moved_at = samples[-1]['t']
            elif samples[-1]['tier_evict'] > 0 and samples[-1]['t'] - moved_at > STILL_S:
                break
            time.sleep(SAMPLE_S)
        return {'full': full, 'objects': objects, 'object_bytes': size, 'target': target,
                'osds': len(osds), 'samples': samples}
    finally:
        c.stop()


def _by_osd(values: Sequence[float]) -> str:
    return '/'.join(f'{v:.0f}' for v in values)


def report(run: Dict[str, Any]) -> str:
    samples = run['samples']
    lines = [f'full {run["full"]:g}: {run["objects"]} clean objects of '
             f'{run["object_bytes"] // KiB} KiB in a {run.get("target", TARGET) >> 20} MiB '
             f'target over {run["osds"]} cache OSDs',
             '       t  evicted  agent_work calls  agent delays  by OSD: evicted, delays']
    # ('-': a run made before the script read tier_delay, or per OSD)
    lines += [f'  {s["t"]:6.2f}  {s["tier_evict"]:7.0f}  {s["agent_wake"]:16.0f}  '
              + (f'{s["tier_delay"]:12.0f}' if 'tier_delay' in s else f'{"-":>12}')
              + (f'  {_by_osd(s["evict_by_osd"])}, {_by_osd(s["delay_by_osd"])}'
                 if 'evict_by_osd' in s else '  -')
              for s in samples]
    rate = evict_rate(samples, run['osds'])
    under_way = running_rate(samples, run['osds'])
    lines.append('  evictions per second per OSD, from the full ratio set to the last '
                 'eviction: ' + ('none evicted' if rate is None else f'{rate:.0f}'))
    lines.append('  ... from the last sample that saw none to the first that saw them all: '
                 + ('none evicted' if under_way is None else f'{under_way:.0f}'))
    if samples and samples[-1]['agent_wake'] > 0:
        # osd_agent_max_ops (4) is the most one call starts; fewer would
        # mean the effort turned objects away.
        lines.append(f'  evictions per agent_work call: '
                     f'{samples[-1]["tier_evict"] / samples[-1]["agent_wake"]:.2f}')
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--object-kib', type=int, default=64)
    ap.add_argument('--objects', type=int, default=15000,
                    help='objects in the cache when the agent starts')
    ap.add_argument('--target-mib', type=int, default=TARGET >> 20,
                    help="the cache pool's target_max_bytes, MiB")
    ap.add_argument('--full', default='0.05', help='full ratios to try, comma separated')
    ap.add_argument('--dir', type=Path, default=None, help='where the clusters run')
    ap.add_argument('--json', type=Path, default=None, help='also write the samples here')
    args = ap.parse_args(argv)
    base = args.dir or Path(tempfile.mkdtemp(prefix='evict-rate-'))
    fulls = [float(f) for f in args.full.split(',')]
    print_runs((one_run(base / f'full-{k}', full, args.objects, args.object_kib * KiB,
                        args.target_mib << 20) for k, full in enumerate(fulls)),
               report, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
