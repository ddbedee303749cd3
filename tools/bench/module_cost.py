#!/usr/bin/python3
"""What one tiertune tick costs the mgr, as pools, cache pools and PGs grow.

Runs the real tiertune Module (on the stub ceph_module the unit tests use)
against synthetic mgr state: the OSD map pool entries and pool_stats entries
recorded from a real cluster (tests/fixtures/overwrite_burst.json), copied
and renamed to the requested number of pools, with the PGs spread over them
and every cache pool's counters advancing as in a write burst.  Each pool's
history is filled to history_size first (the models then fit on full
histories), and the steady-state tick (no osd_map notification) is timed.

Measured: CPU seconds per tick (time.process_time, median and p95 of
--ticks ticks), Python memory the module holds after filling its histories
(tracemalloc), and the get() calls one tick makes.  Not included: the mgr's
own C++ work to build get('pool_stats') for Python, which is O(pools).

The machine's speed moves from hour to hour (a shared VM: the same code
measured 7.6 and 12.9 ms a few minutes apart), so each round also times a
fixed reference (REFERENCE_LOOP, pure Python, about 70 ms on a quiet
day), and --rounds N measures every row N times, round by round, printing
the median of the rounds' medians with their range.

The mgr's serve loop sleeps sleep_interval between ticks, and a tick that
follows a sleep runs on cold caches (and, on a VM, a vCPU just woken):
on this machine it took about 1.5 times a back-to-back tick's CPU, even
after a 50 ms sleep.  --sleep S also times as many ticks that each follow
an S-second sleep, after the back-to-back ones (printed side by side).

usage: tools/bench/module_cost.py [--ticks N] [--history N] [--mode warn|on] [--rounds N]
                                  [--sleep S]
"""

import argparse
import copy
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / 'src' / 'pybind' / 'mgr' / 'tiertune' / 'tests'
sys.path.insert(0, str(TESTS))

from loaded_tiers import Recorded, load_fixture  # noqa: E402
from machine_speed import REFERENCE_LOOP, reference_ms  # noqa: E402

from mgr_stub import new_module  # noqa: E402

FIXTURE = TESTS / 'fixtures' / 'overwrite_burst.json'
GRID = [  # (pools, cache pools, PGs)
    (10, 1, 1_000),
    (100, 8, 10_000),
    (1000, 64, 1_000),
    (1000, 64, 10_000),
    (1000, 64, 100_000),
    (200, 64, 100_000),
    (1000, 16, 100_000),
    (1000, 1, 100_000),
]
TICK_S = 30.0


def templates() -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
    rec = json.loads(FIXTURE.read_text())
    first, last = rec['samples'][0]['inputs'], rec['samples'][-1]['inputs']
    pools = {p['cache_mode'] != 'none': p for p in first['osd_map']['pools']}
    stats = {e['poolid']: e for e in last['pool_stats']['pool_stats']}
    cache, base = pools[True], pools[False]
    return cache, base, stats[cache['pool']], stats[base['pool']]


def synthetic_state(n_pools: int, n_cache: int, n_pgs: int,
                    recorded: Optional[Recorded] = None) -> Dict[str, Any]:
    """recorded: take the tiers' OSD map entries from the recording of
    loaded tiers (its targets and ratios, which the levels are fractions
    of), and their counters from it as advance() moves them."""
    cache_t, base_t, cstat_t, bstat_t = templates()
    if recorded is not None:
        cache_t, base_t = recorded.cache_pool, recorded.base_pool
    pg_each = max(n_pgs // n_pools, 1)
    pools: List[Dict[str, Any]] = []
    stats: List[Dict[str, Any]] = []
    for i in range(n_pools):
        pid = i + 1
        if i < 2 * n_cache:
            is_cache = i % 2 == 1
            p = copy.deepcopy(cache_t if is_cache else base_t)
            st = copy.deepcopy(cstat_t if is_cache else bstat_t)
            if is_cache:
                p['tier_of'] = pid - 1
            else:
                p['tiers'] = [pid + 1]
                p['read_tier'] = p['write_tier'] = pid + 1
        else:
            p = copy.deepcopy(base_t)
            p.update(tiers=[], read_tier=-1, write_tier=-1)
            st = copy.deepcopy(bstat_t)
        p['pool'], p['pool_name'] = pid, f'pool{pid}'
        # Every count at rest (at its target): a pool whose counts moved
        # would be held, and its PGs read (tiertune's splits).
        for key in ('pg_num', 'pg_placement_num', 'pg_num_target', 'pg_placement_num_target',
                    'pg_num_pending'):
            p[key] = pg_each
        st['poolid'], st['num_pg'] = pid, pg_each
        pools.append(p)
        stats.append(st)
    osds = [{'osd': i, 'up': 1, 'in': 1} for i in range(max(n_pgs // 100, 3))]
    return {'osd_map': {'epoch': 1, 'flags': 'sortbitwise', 'osds': osds, 'pools': pools},
            'pool_stats': {'pool_stats': stats}, 'n_cache': n_cache}


def advance(state: Dict[str, Any], step: int, recorded: Optional[Recorded] = None) -> None:
    """Move every cache pool's counters on, as a burst would (cheap: ints);
    with recorded, each tier's (cache and base pool) to recorded tier
    number i's at this step, tier i being the i-th cache pool."""
    if recorded is not None:
        stats = state['pool_stats']['pool_stats']
        for i in range(state['n_cache']):
            base, cache = stats[2 * i], stats[2 * i + 1]
            _, cache['stat_sum'], base['stat_sum'] = recorded.stat_sums(i, step)
        return
    for e in state['pool_stats']['pool_stats']:
        s = e['stat_sum']
        s['num_write'] += 40
        s['num_write_kb'] += 40 * 1024
        s['num_flush'] += 10 * (step % 3)
        s['num_flush_kb'] += 10 * 1024 * (step % 3)
        s['num_promote'] += 5
        s['num_objects_dirty'] = 20 + (step * 7) % 40


def measure(n_pools: int, n_cache: int, n_pgs: int, history: int, ticks: int,
            mode: str, sleep_s: float = 0.0,
            recorded: Optional[Recorded] = None) -> Dict[str, Any]:
    state = synthetic_state(n_pools, n_cache, n_pgs, recorded)
    # The recording's own interval: its counters moved that much per tick.
    tick_s = recorded.tick_s if recorded is not None else TICK_S
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    m, get = new_module(state)
    m.history_size = history
    m._book.resize(history)
    m._tuner.settings.mode = mode
    wall = time.time()
    for i in range(history):
        advance(state, i, recorded)
        m.tick(mono=i * tick_s, wall=wall + i * tick_s)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    get.asked.clear()
    cpu: List[float] = []
    cold: List[float] = []    # ticks after a sleep (see --sleep)
    # The back-to-back ticks first, then (with a sleep) as many after one:
    # alternating them, each back-to-back tick followed a slept one and ran
    # partly cold itself.
    for j in range(ticks * (2 if sleep_s > 0 else 1)):
        i = history + j
        advance(state, i, recorded)
        after_sleep = j >= ticks
        if after_sleep:
            time.sleep(sleep_s)
        t0 = time.process_time()
        m.tick(mono=i * tick_s, wall=wall + i * tick_s)
        (cold if after_sleep else cpu).append(time.process_time() - t0)
    calls = sorted(set(get.asked))
    row = {'pools': n_pools, 'cache_pools': n_cache, 'pgs': n_pgs,
           'tick_ms_median': statistics.median(cpu) * 1000, 'tick_ms_p95': _p95(cpu) * 1000,
           'held_mib': held / (1 << 20), 'get_calls': calls,
           'get_calls_per_tick': len(get.asked) / (len(cpu) + len(cold))}
    if cold:
        row.update(after_sleep_ms_median=statistics.median(cold) * 1000,
                   after_sleep_ms_p95=_p95(cold) * 1000)
    return row


def _p95(xs: List[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def summary(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One grid row over its rounds: the median of the rounds' medians
    and p95s, their range, and the rest from the first round."""
    medians = sorted(r['tick_ms_median'] for r in runs)
    row = {**runs[0], 'tick_ms_median': statistics.median(medians),
           'tick_ms_p95': statistics.median(r['tick_ms_p95'] for r in runs),
           'tick_ms_median_range': [medians[0], medians[-1]], 'rounds': len(runs)}
    if 'after_sleep_ms_median' in runs[0]:
        cold = sorted(r['after_sleep_ms_median'] for r in runs)
        row.update(after_sleep_ms_median=statistics.median(cold),
                   after_sleep_ms_p95=statistics.median(r['after_sleep_ms_p95'] for r in runs),
                   after_sleep_ms_median_range=[cold[0], cold[-1]])
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ticks', type=int, default=20)
    ap.add_argument('--history', type=int, default=120)
    ap.add_argument('--mode', choices=('warn', 'on'), default='warn')
    ap.add_argument('--rounds', type=int, default=1,
                    help='measure every row this many times, round by round')
    ap.add_argument('--sleep', type=float, default=0.0,
                    help='also time ticks that each follow a sleep of this many seconds, '
                         'as the mgr sleeps between ticks')
    ap.add_argument('--counters', choices=('synthetic', 'recorded'), default='synthetic',
                    help='the cache pools\' counters: a steady synthetic burst, or tiers '
                         'under client writes recorded on the local cluster '
                         '(loaded_tiers.py, 2 s ticks)')
    ap.add_argument('--json', type=Path, help='also write the rows here')
    args = ap.parse_args()
    recorded = Recorded(load_fixture()) if args.counters == 'recorded' else None
    # Warm-up: the first run pays imports (numpy, the module) into its memory.
    measure(10, 1, 1000, 3, 1, args.mode)
    rounds: List[List[Dict[str, Any]]] = []
    references: List[float] = []
    for _ in range(args.rounds):
        references.append(reference_ms())
        rounds.append([measure(p, c, g, args.history, args.ticks, args.mode, args.sleep,
                               recorded)
                       for p, c, g in GRID])
    references.append(reference_ms())
    rows = [summary(list(runs)) for runs in zip(*rounds, strict=True)]
    print(f'tiertune tick cost: {args.ticks} steady ticks after {args.history} samples per '
          f'pool, mode {args.mode}, CPU by time.process_time, {args.rounds} round(s)')
    print('cache pool counters: ' + (
        f'recorded, tiers under client writes ({recorded.ticks} ticks of {recorded.tick_s:g} s '
        f'of {len(recorded)} tiers, replayed round robin)' if recorded is not None
        else f'synthetic, a steady burst every {TICK_S:g} s tick'))
    print(f'reference loop ({REFERENCE_LOOP:,} iterations) before each round and after: '
          + ', '.join(f'{r:.0f}' for r in references) + ' ms')
    if args.sleep:
        print(f'AFTER SLEEP: as many ticks again, each after a {args.sleep:g} s sleep (TICK MS: '
              f'back to back)')
    cold_head = f' {"AFTER SLEEP":>12} {"RANGE":>13}' if args.sleep else ''
    print(f'{"POOLS":>6} {"CACHE":>6} {"PGS":>8} {"TICK MS (MEDIAN)":>17} {"RANGE":>13} '
          f'{"P95":>7}{cold_head} {"HELD MIB":>9}  GET CALLS/TICK')
    for r in rows:
        lo, hi = r['tick_ms_median_range']
        cold = ''
        if args.sleep:
            clo, chi = r['after_sleep_ms_median_range']
            cold = f' {r["after_sleep_ms_median"]:>12.2f} {f"{clo:.2f}-{chi:.2f}":>13}'
        print(f'{r["pools"]:>6} {r["cache_pools"]:>6} {r["pgs"]:>8} '
              f'{r["tick_ms_median"]:>17.2f} {f"{lo:.2f}-{hi:.2f}":>13} '
              f'{r["tick_ms_p95"]:>7.2f}{cold} {r["held_mib"]:>9.1f}  '
              f'{r["get_calls_per_tick"]:.0f} ({", ".join(r["get_calls"])})')
    if args.json:
        args.json.write_text(json.dumps({'reference_ms': references, 'rows': rows,
                                         'rounds': rounds}, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
