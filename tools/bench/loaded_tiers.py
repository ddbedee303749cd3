#!/usr/bin/python3
"""Counters of cache tiers under client writes, recorded on the local cluster.

module_cost.py times the tick on synthetic mgr state; its own counters
(every cache pool writing the same steady amount each tick) leave the
models less to do than a real loaded pool does: a real pool's writes come
in runs, its PGs enter and leave the flush modes, its promotes and proxied
IO move with them.  This records real ones, once, into a fixture
(fixtures/loaded-tiers.json) that module_cost.py --counters recorded
replays for every cache pool.

`capture` starts a local cluster (tools/localcluster, memstore OSDs), makes
--tiers writeback tiers and writes to them as mgr_tick_cost.py --load-ops
does (256 KiB objects over 8 keys a pool, 4 MiB targets, dirty ratio 0.1,
bursts of --load-period s and as long a pause), with tiertune sampling
every 2 s, then reads the samples tiertune saved (its config-key store)
and the OSD map entries of the tiers, and writes the fixture: per cache
pool, its samples at the ticks all pools share, each row the tick's
times, PG count, the cache pool's counters and its base pool's.

usage: tools/bench/loaded_tiers.py capture [--tiers 4] [--load-ops 12] [--load-period 30]
                                           [--seconds 330] [--dir DIR] [--out FILE]
"""

import argparse
import dataclasses
import datetime
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURE = HERE / 'fixtures' / 'loaded-tiers.json'
TICK_S = 2


def _tiertune(name: str) -> Any:
    """A module of the tiertune package, importable outside ceph-mgr through
    the unit tests' stub ceph_module (as module_cost.py runs the module)."""
    tests = str(REPO / 'src' / 'pybind' / 'mgr' / 'tiertune' / 'tests')
    if tests not in sys.path:
        sys.path.insert(0, tests)
    importlib.import_module('mgr_stub')
    return importlib.import_module(f'tiertune.{name}')


def fixture_from(raw: Dict[str, Any], how: str) -> Dict[str, Any]:
    """The fixture from a capture: raw['samples'] the config-key dump of
    mgr/tiertune/samples/, raw['osd_map'] the tiers' OSD map (dump-inputs)."""
    sample_store, sampling = _tiertune('sample_store'), _tiertune('sampling')
    decoded = {}
    for key, text in raw['samples'].items():
        entries, problem = sample_store.decode(text, 0.0, raw['wall'], 1e12)
        if problem:
            raise ValueError(f'{key}: {problem}')
        decoded[int(key.rsplit('/', 1)[1])] = {round(s.wall, 3): s for s, *_ in entries}
    # Each pool's samples were saved at a different tick: the ticks all have.
    walls = sorted(set.intersection(*(set(d) for d in decoded.values())))
    if len(walls) < 2:
        raise ValueError(f'the pools\' saved samples share {len(walls)} tick(s): too few')
    pools: Dict[str, Any] = {}
    for pid, by_wall in sorted(decoded.items()):
        first = by_wall[walls[0]]
        assert first.base is not None
        pools[str(pid)] = {'rows': [
            [round(s.mono - first.mono, 3), s.wall, s.num_pg,
             *dataclasses.astuple(s.counters), *dataclasses.astuple(s.base)]
            for s in (by_wall[w] for w in walls)]}
    return {'what': 'cache tiers under client writes, as tiertune sampled them',
            'how': how, 'tick_s': TICK_S, 'counters': list(sampling.COUNTER_NAMES),
            'row': 'mono, wall, num_pg, the cache pool counters, its base pool counters',
            'osd_map_pools': raw['osd_map']['pools'], 'pools': pools}


class Recorded:
    """The fixture's pools, for a bench that replays them: the stat_sum of
    recorded pool i at tick k, the cumulative counters carried on past the
    recording's end (its k-th tick again, plus all it had counted by then
    and one first interval more, so that going round again reads as the
    recording's first interval, not as a quiet one)."""

    def __init__(self, fixture: Dict[str, Any]) -> None:
        self.names: List[str] = fixture['counters']
        self.tick_s: float = fixture['tick_s']
        self.rows = [p['rows'] for _, p in sorted(fixture['pools'].items(),
                                                  key=lambda kv: int(kv[0]))]
        self.ticks = min(len(r) for r in self.rows)
        # OSD map entries of one recorded tier: what a replaying bench
        # copies for each of its tiers (target, ratios, hit sets).
        pools = {p['pool']: p for p in fixture['osd_map_pools']}
        self.cache_pool = next(p for p in pools.values() if p['tier_of'] >= 0)
        self.base_pool = pools[self.cache_pool['tier_of']]
        cumulative = _tiertune('sampling').CUMULATIVE_COUNTERS
        self._cumulative = [n in cumulative for n in self.names]

    def __len__(self) -> int:
        return len(self.rows)

    def stat_sums(self, i: int, k: int) -> Tuple[int, Dict[str, int], Dict[str, int]]:
        """(num_pg, cache stat_sum, base stat_sum) of recorded pool i % len at tick k."""
        rows = self.rows[i % len(self.rows)]
        lap, at = divmod(k, self.ticks)
        row, last, first, second = rows[at], rows[self.ticks - 1], rows[0], rows[1]
        n = len(self.names)

        def counters(offset: int) -> Dict[str, int]:
            def lap_span(j: int) -> int:
                c = offset + j
                return last[c] - first[c] + second[c] - first[c]
            return {name: row[offset + j] + (lap * lap_span(j) if self._cumulative[j] else 0)
                    for j, name in enumerate(self.names)}
        return row[2], counters(3), counters(3 + n)


def load_fixture(path: Path = FIXTURE) -> Dict[str, Any]:
    fixture: Dict[str, Any] = json.loads(path.read_text())
    return fixture


def capture(out: Path, tiers: int, load_ops: float, load_period: float, seconds: float,
            workdir: Optional[Path]) -> int:
    sys.path.insert(0, str(HERE.parent))
    import mgr_tick_cost as mtc

    from localcluster import ClusterSpec, LocalCluster
    workdir = workdir or Path(tempfile.mkdtemp(prefix='tiertune-loaded-tiers-'))
    c = LocalCluster(workdir, ClusterSpec().with_overrides(mtc.CLUSTER_OVERRIDES))
    load = mtc.Load(c, load_ops, load_period)
    try:
        mtc.start_cluster(c, TICK_S, 120)
        # Saved every tick (one pool a tick): the pools' saved histories
        # then end within a few ticks of each other and share most ticks.
        c.ceph('config', 'set', 'mgr', 'mgr/tiertune/samples_save_interval', '0')
        mtc.add_tiers(c, 0, tiers, 1, mtc.LOAD_TARGET_MAX_BYTES, mtc.LOAD_RATIOS)
        c.wait_clean(timeout=300)
        load.start(tiers)
        time.sleep(seconds)
        raw = {'samples': c.ceph_json('config-key', 'dump', 'mgr/tiertune/samples/'),
               'osd_map': json.loads(c.ceph('tiertune', 'dump-inputs').stdout)['osd_map'],
               'wall': time.time()}
    finally:
        load.stop()
        c.stop()
    how = (f'tools/bench/loaded_tiers.py capture --tiers {tiers} --load-ops {load_ops:g} '
           f'--load-period {load_period:g} --seconds {seconds:g}, '
           f'{datetime.date.today().isoformat()}: {load.written} writes')
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fixture_from(raw, how), separators=(',', ':')) + '\n')
    print(f'{out}: {how}')
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    cap = sub.add_parser('capture')
    cap.add_argument('--tiers', type=int, default=4)
    cap.add_argument('--load-ops', type=float, default=12.0,
                     help='writes per second over all tiers while on (3 a pool by default)')
    cap.add_argument('--load-period', type=float, default=30.0)
    cap.add_argument('--seconds', type=float, default=330.0,
                     help='of load before the samples are read (120 ticks of 2 s, and more)')
    cap.add_argument('--dir', type=Path)
    cap.add_argument('--out', type=Path, default=FIXTURE)
    args = ap.parse_args(argv)
    return capture(args.out, args.tiers, args.load_ops, args.load_period, args.seconds,
                   args.dir)


if __name__ == '__main__':
    sys.exit(main())
