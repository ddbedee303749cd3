"""How fast the simulator runs a day: diurnal-day (two hours) repeated
twelve times on a 256-PG cache pool, under tiertune (the module's own code
ticking every TIERTUNE_SLEEP_INTERVAL_S) and under Ceph's defaults.
Prints wall and CPU seconds, and the wall seconds spent in tiertune's ticks
(the module's code and the mgr view it reads); `make bench-sim-speed`."""

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fp_pin

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies
import scenario as scn
from simulator.run import STEP_S, simulate
from simulator.tier import FINE_STEPS

PG_NUM = 256
REPEAT = 12


def main() -> int:
    day = scn.load(scn.shipped()['diurnal-day'])
    sc = dataclasses.replace(day, name='diurnal-24h-256pg', pg_num=PG_NUM, repeat=REPEAT)
    print(f'{sc.name}: {sc.duration_s / 3600:.0f} h simulated in {STEP_S:g} s steps '
          f'({FINE_STEPS} of {STEP_S / FINE_STEPS:g} s while a PG is FULL), '
          f'{sc.pg_num} PGs')
    print(f'{"policy":22s} {"wall s":>8s} {"cpu s":>8s} {"sim s per wall s":>17s} '
          f'{"in ticks s":>10s}')
    ticks: List[float] = [0.0]
    tick = policies.TiertuneDriver.tick

    def timed_tick(self: policies.TiertuneDriver, *args: Any, **kwargs: Any) -> None:
        t = time.perf_counter()
        tick(self, *args, **kwargs)
        ticks[0] += time.perf_counter() - t
    policies.TiertuneDriver.tick = timed_tick   # type: ignore[method-assign]
    for name in ('static:0.4,0.6,0.8', 'tiertune'):
        ticks[0] = 0.0
        wall, cpu = time.perf_counter(), time.process_time()
        simulate(sc, policies.parse(name))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f'{name:22s} {wall:8.1f} {cpu:8.1f} {sc.duration_s / wall:17.0f} '
              f'{ticks[0]:10.1f}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
