#!/usr/bin/python3
"""What a model fit from scratch costs: models.fit over one cache pool's
whole history, as the first tick (or a history that does not continue the
one its SeriesCache mirrors) makes it; a steady tick converts only the
newest sample (module_cost.py times that).

The history is the stub module's own (module_cost.py's synthetic state,
one tier), its counters those recorded from tiers under client writes
(tools/bench/fixtures/loaded-tiers.json), ticked to each length.  Timed
with time.perf_counter around models.fit, --runs times per length, after
one untimed fit; prints the median and the maximum.

usage: tools/bench/fit_cost.py [--lengths 120,2000] [--runs 30]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import module_cost as mc  # noqa: E402
from loaded_tiers import Recorded, _tiertune, load_fixture  # noqa: E402
from machine_speed import reference_ms  # noqa: E402


def fit_ms(length: int, runs: int, recorded: Recorded) -> List[float]:
    models = _tiertune('models')
    state = mc.synthetic_state(2, 1, 2, recorded)
    m, _ = mc.new_module(state)
    m.history_size = length
    m._book.resize(length)
    wall = time.time()
    for i in range(length):
        mc.advance(state, i, recorded)
        m.tick(mono=i * recorded.tick_s, wall=wall + i * recorded.tick_s)
    (pid, tier), = m._tiers.items()
    entries = m._book.get(pid).entries
    assert len(entries) == length, len(entries)
    models.fit(entries, tier, models.DEFAULT_LIMITS)
    out: List[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        models.fit(entries, tier, models.DEFAULT_LIMITS)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lengths', default='120,2000')
    ap.add_argument('--runs', type=int, default=30)
    args = ap.parse_args()
    mc.measure(10, 1, 1000, 3, 1, 'warn')       # imports, warm-up
    recorded = Recorded(load_fixture())
    ref = [reference_ms()]
    rows = [(n, fit_ms(n, args.runs, recorded)) for n in map(int, args.lengths.split(','))]
    ref.append(reference_ms())
    print(f'models.fit from scratch, one cache pool, {args.runs} runs a length '
          f'(reference loop before and after: {ref[0]:.0f}, {ref[1]:.0f} ms)')
    print(f'{"SAMPLES":>8} {"MEDIAN MS":>10} {"MAX MS":>8}')
    for n, ms in rows:
        print(f'{n:>8} {statistics.median(ms):>10.2f} {max(ms):>8.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
