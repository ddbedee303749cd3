#!/usr/bin/python3
"""How a steady tick's models-and-law step splits between fitting the
models and deciding: the tick's own StepClock gives the step
(models_and_law), and time.perf_counter around Tuner._decide_pool gives
the decisions in it (per pool: the controller's input with the hold
reasons, controller.decide with the law, the bounded step and the
reasons' set-up, and the pool's view).  The rest of the step is the fits
(the SeriesCache update and the estimates) and the glue between them.

The state is module_cost.py's (the stub mgr the unit tests use, synthetic
pools, each cache pool's counters those recorded from tiers under client
writes), each history filled to 120 samples, then --ticks steady ticks
timed, mode warn.  The timer around _decide_pool costs two thread_time
calls a pool (0.45 µs together here, timeit), counted in the
decisions.

usage: tools/bench/tick_split.py [--pools 200] [--cache 64] [--pgs 100000] [--ticks 40]
                                 [--rounds 3]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import module_cost as mc  # noqa: E402
from loaded_tiers import Recorded, _tiertune, load_fixture  # noqa: E402
from machine_speed import reference_ms  # noqa: E402

HISTORY = 120


def split(pools: int, cache: int, pgs: int, ticks: int,
          recorded: Recorded) -> Dict[str, float]:
    """Medians over the steady ticks, in ms: the tick's CPU, its
    models_and_law step, the decisions in that step, and the rest."""
    tuner_cls: Any = _tiertune('tuner').Tuner
    real: Callable[..., Any] = tuner_cls._decide_pool
    spent = [0.0]

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real(self, *args, **kwargs)
        finally:
            spent[0] += time.thread_time() - t0

    state = mc.synthetic_state(pools, cache, pgs, recorded)
    m, _ = mc.new_module(state)
    m.history_size = HISTORY
    m._book.resize(HISTORY)
    m._tuner.settings.mode = 'warn'
    wall, tick_s = time.time(), recorded.tick_s
    for i in range(HISTORY):
        mc.advance(state, i, recorded)
        m.tick(mono=i * tick_s, wall=wall + i * tick_s)
    cpu: List[float] = []
    step: List[float] = []
    decide: List[float] = []
    tuner_cls._decide_pool = timed
    try:
        for j in range(ticks):
            i = HISTORY + j
            mc.advance(state, i, recorded)
            spent[0] = 0.0
            t0 = time.process_time()
            m.tick(mono=i * tick_s, wall=wall + i * tick_s)
            cpu.append(time.process_time() - t0)
            step.append(m._tick_costs._ticks[-1].parts['models_and_law'])
            decide.append(spent[0])
    finally:
        tuner_cls._decide_pool = real
    fits = [s - d for s, d in zip(step, decide, strict=True)]
    return {name: statistics.median(xs) * 1000 for name, xs in (
        ('tick_ms', cpu), ('models_and_law_ms', step), ('decisions_ms', decide),
        ('fits_and_glue_ms', fits))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--pools', type=int, default=200)
    ap.add_argument('--cache', type=int, default=64)
    ap.add_argument('--pgs', type=int, default=100_000)
    ap.add_argument('--ticks', type=int, default=40)
    ap.add_argument('--rounds', type=int, default=3)
    args = ap.parse_args()
    recorded = Recorded(load_fixture())
    print(f'{args.pools} pools, {args.cache} cache pools, {args.pgs} PGs, recorded counters, '
          f'{HISTORY} samples per pool, mode warn; medians of {args.ticks} steady ticks, ms')
    print(f'{"ROUND":>5}  {"REFERENCE MS":>12}  {"TICK":>6}  {"MODELS AND LAW":>14}  '
          f'{"DECISIONS":>9}  {"FITS AND GLUE":>13}')
    for r in range(1, args.rounds + 1):
        ref = reference_ms()
        row = split(args.pools, args.cache, args.pgs, args.ticks, recorded)
        print(f'{r:>5}  {ref:>12.0f}  {row["tick_ms"]:>6.2f}  {row["models_and_law_ms"]:>14.2f}'
              f'  {row["decisions_ms"]:>9.2f}  {row["fits_and_glue_ms"]:>13.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
