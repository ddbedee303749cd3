#!/usr/bin/python3
"""Instructions one steady tiertune tick executes, counted by valgrind.

module_cost.py times ticks in CPU seconds, which on a shared VM move by
half from one hour to the next whatever the code does.  An instruction
count does not: this runs the same synthetic mgr state (module_cost's: the
pools' histories filled to --history samples, mode warn) under
`valgrind --tool=callgrind` twice, once stopping after the fill and once
after --ticks more ticks, and prints the difference per tick.  The two runs
share PYTHONHASHSEED, so they differ only in the ticks (repeat runs agree
to about 1%: addresses still vary).  Each run takes about a minute per 120
filled ticks of 64 cache pools.  For comparing two versions of the module
(run it in each tree); a count is not a time (numpy's calls and Python's
differ in instructions per second, and memory layout moves time without
moving the count: a change that cut 8% of the instructions made the tick
slower by turning every held value's inline attributes into a dict; check
module_cost.py's held MiB and times too).  --counters recorded replays the
tiers under client writes recorded on the local cluster (as module_cost.py
--counters recorded does): the synthetic counters write the same amount
every tick, one run of writes as long as the history, so the models never
see runs begin and end, PGs change flush modes or the law's burst paths.

usage: tools/bench/tick_instructions.py [--pools N] [--cache-pools N] [--pgs N]
           [--history N] [--ticks N] [--counters synthetic|recorded]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent
COLLECTED = re.compile(r'^==\d+== Collected : (\d+)$', re.M)


def ticks_only(pools: int, cache_pools: int, pgs: int, history: int, ticks: int,
               counters: str) -> None:
    """The measured program: fill, then `ticks` steady ticks, nothing timed."""
    sys.path.insert(0, str(HERE))
    import module_cost as mc
    from loaded_tiers import Recorded, load_fixture
    recorded = Recorded(load_fixture()) if counters == 'recorded' else None
    tick_s = recorded.tick_s if recorded is not None else mc.TICK_S
    state = mc.synthetic_state(pools, cache_pools, pgs, recorded)
    m, _ = mc.new_module(state)
    m.history_size = history
    m._book.resize(history)
    m._tuner.settings.mode = 'warn'
    for i in range(history + ticks):
        mc.advance(state, i, recorded)
        m.tick(mono=i * tick_s, wall=1.7e9 + i * tick_s)


def collected(stderr: str) -> Optional[int]:
    """callgrind's total instruction count from its stderr summary."""
    found = COLLECTED.findall(stderr)
    return int(found[-1]) if found else None


def count(args: argparse.Namespace, ticks: int) -> int:
    cmd = ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
           sys.executable, str(Path(__file__).resolve()), '--run-ticks', str(ticks),
           '--pools', str(args.pools), '--cache-pools', str(args.cache_pools),
           '--pgs', str(args.pgs), '--history', str(args.history),
           '--counters', args.counters]
    env = {**os.environ, 'PYTHONHASHSEED': '0'}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    n = collected(done.stderr)
    if done.returncode != 0 or n is None:
        raise SystemExit(f'valgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}')
    return n


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--pools', type=int, default=200)
    ap.add_argument('--cache-pools', type=int, default=64)
    ap.add_argument('--pgs', type=int, default=100_000)
    ap.add_argument('--history', type=int, default=120)
    ap.add_argument('--ticks', type=int, default=30)
    ap.add_argument('--counters', choices=('synthetic', 'recorded'), default='synthetic',
                    help='the cache pools\' counters: a steady synthetic burst, or tiers '
                         'under client writes recorded on the local cluster')
    ap.add_argument('--run-ticks', type=int, help=argparse.SUPPRESS)   # the measured program
    args = ap.parse_args(argv)
    if args.run_ticks is not None:
        ticks_only(args.pools, args.cache_pools, args.pgs, args.history, args.run_ticks,
                   args.counters)
        return 0
    if shutil.which('valgrind') is None:
        print('valgrind not found (Debian package valgrind)', file=sys.stderr)
        return 1
    base = count(args, 0)
    total = count(args, args.ticks)
    per_tick = (total - base) / args.ticks
    print(f'{args.pools} pools, {args.cache_pools} cache pools, {args.pgs} PGs, history '
          f'{args.history}, {args.counters} counters: {per_tick / 1e6:.1f} M instructions per '
          f'steady tick (callgrind, {args.ticks} ticks after the fill; fill alone '
          f'{base / 1e9:.2f} G)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
