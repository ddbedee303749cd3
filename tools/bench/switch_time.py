"""What does the time of a ratio change cost?  A shipped scenario run at a
static setting that one `osd pool set` changes at each --at time, beside
the same scenario with the new value from t=0, on PG spreads 0..N-1
(simulator).

    switch_time.py --scenarios a,b [--set cache_target_full_ratio=0.9]
                   [--start 0.4,0.6,0.8] [--at 1,10,20,30,40,50,60]
                   [--seeds N] [--jobs J] [--out FILE.md]

tiertune's first change comes some 40 s into a suite run (warm_start.py),
and two read scenarios trail best-static on seed 0 by a few thousandths of
hit ratio, which session 18-20's notes read as the price of acting late.
Here nothing but the time differs: no module, the ratios static but for
the one change (which, like every `osd pool set`, drops the PGs' in-memory
hit sets), so each row says what a change at that time gives on each PG
spread, and the first row what the same value from t=0 gives.

It prints, per scenario, the primary metric (run.primary_metric) of every
(time, spread), the mean over spreads, and the mean's difference from the
t=0 row.
"""

import argparse
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import run  # noqa: E402
import scenario as scn  # noqa: E402
from report import emit  # noqa: E402
from seeds import map_jobs, nan_if_none  # noqa: E402
from simulator.run import RATIO_VARS, simulate  # noqa: E402
from simulator.tier import TierSim  # noqa: E402

DEFAULT_AT = (1.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0)
FROM_START = 0.0        # the row with the new value from t=0 (a static run)

Ratios3 = Tuple[float, float, float]
_Job = Tuple[scn.Scenario, Ratios3, str, float, float, int]


def with_value(start: Ratios3, var: str, value: float) -> Ratios3:
    """start with var set to value; ValueError unless dirty <= dirty_high <= full."""
    out = list(start)
    out[dict(RATIO_VARS)[var]] = value
    d, h, f = out
    if not 0.0 <= d <= h <= f <= 1.0:
        raise ValueError(f'{var}={value:g} on {start} breaks dirty <= dirty_high <= full')
    return d, h, f


def _static(r: Ratios3) -> policies.PolicySpec:
    return policies.parse('static:' + ','.join(f'{x:g}' for x in r))


def one_run(job: _Job) -> float:
    """The primary metric of one run: from t=0 when at is FROM_START, else
    the start ratios with var set to value at `at` seconds."""
    sc, start, var, value, at, seed = job
    if at == FROM_START:
        rec = simulate(sc, _static(with_value(start, var, value)), seed=seed)
    else:
        done = [False]

        def change(t: float, sim: TierSim) -> None:
            # t is the end of the step just run: the new value holds from the next.
            if not done[0] and t >= at:
                err = sim.pool_set(var, f'{value:g}')
                assert err is None, err
                done[0] = True
        rec = simulate(sc, _static(start), seed=seed, observe=change)
        assert done[0], f'the run ended before t={at:g} s'
    return nan_if_none(rec.metrics.get(run.primary_metric(sc)[0]))


def measure(scs: Sequence[scn.Scenario], start: Ratios3, var: str, value: float,
            at: Sequence[float], seeds: int, jobs: int) -> Dict[str, Dict[float, List[float]]]:
    """{scenario: {time (FROM_START first): [primary metric per seed]}}"""
    times = [FROM_START, *at]
    work: List[_Job] = [(sc, start, var, value, t, s)
                        for sc in scs for t in times for s in range(seeds)]
    got = iter(map_jobs(one_run, work, jobs))
    return {sc.name: {t: [next(got) for _ in range(seeds)] for t in times} for sc in scs}


def report(scs: Sequence[scn.Scenario], res: Dict[str, Dict[float, List[float]]],
           start: Ratios3, var: str, value: float, seeds: int) -> str:
    d, h, f = start
    lines = ['# What the time of a ratio change costs (simulator)', '',
             f'`tools/bench/switch_time.py`: from {d:g}/{h:g}/{f:g}, `{var}` set to '
             f'{value:g} at t (s), on PG spreads 0..{seeds - 1}; the first row has it from '
             f't=0 (a static run). Each cell: the primary metric; diff: the mean minus '
             f'the first row\'s.', '']
    for sc in scs:
        metric, lower = run.primary_metric(sc)
        rows = res[sc.name]
        base = statistics.fmean(rows[FROM_START])
        lines += [f'## {sc.name}', '',
                  f'{metric} ({"lower" if lower else "higher"} is better).', '',
                  '| t (s) | ' + ' | '.join(f'spread {s}' for s in range(seeds))
                  + ' | mean | diff |',
                  '|---|' + '---:|' * (seeds + 2)]
        for t, vals in rows.items():
            mean = statistics.fmean(vals)
            label = 'from t=0' if t == FROM_START else f'{t:g}'
            lines.append(f'| {label} | ' + ' | '.join(f'{v:.6g}' for v in vals)
                         + f' | {mean:.6g} | {mean - base:+.4g} |')
        lines.append('')
    return '\n'.join(lines)


def _floats(text: str) -> List[float]:
    return [float(x) for x in text.split(',') if x.strip()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--scenarios', required=True, help='names, comma-separated')
    p.add_argument('--set', default='cache_target_full_ratio=0.9', help='VAR=VALUE')
    p.add_argument('--start', type=_floats, default=list(policies.CEPH_DEFAULTS))
    p.add_argument('--at', type=_floats, default=list(DEFAULT_AT))
    p.add_argument('--seeds', type=int, default=5)
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--out', type=Path)
    a = p.parse_args(argv)
    var, _, text = a.set.partition('=')
    if var not in dict(RATIO_VARS):
        p.error(f'--set: VAR is one of {", ".join(v for v, _ in RATIO_VARS)}')
    if len(a.start) != 3:
        p.error('--start: three ratios, dirty,dirty_high,full')
    if any(t <= FROM_START for t in a.at):
        p.error('--at: each time after t=0')
    if a.seeds < 1:
        p.error('--seeds: at least 1')
    start: Ratios3 = (a.start[0], a.start[1], a.start[2])
    try:
        value = float(text)
        with_value(start, var, value)
    except ValueError as e:
        p.error(f'--set: {e}')
    try:
        scs = scn.load_shipped([n for n in a.scenarios.split(',') if n])
    except scn.ScenarioError as e:
        p.error(str(e))
    text = report(scs, measure(scs, start, var, value, a.at, a.seeds, a.jobs), start, var,
                  value, a.seeds)
    emit(text, a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
