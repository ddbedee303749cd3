"""Does tiertune's start cost it against best-static?  The shipped scenarios
with tiertune meeting the workload cold (the suite's protocol) and warm,
beside Ceph's defaults and best-static's pick (simulator).

    warm_start.py [--lead-ticks 2,9] [--scenarios a,b] [--seeds N] [--jobs J]
                  [--out FILE.md]

Every run of the suite starts tiertune two ticks before the workload
(simulator.run.LEAD_IN_TICKS): it has one idle interval and no fitted model,
so it meets the workload at Ceph's defaults and first acts some 40 s into
it, while a static setting has its ratios from t=0.  Two scenarios where
tiertune trails best-static on seed 0 (make bench-sim) were read as paying
for that start.  Here each scenario runs with tiertune's module ticking
over the idle, empty tier for each --lead-ticks count before t=0 (9 ticks,
90 s, are enough for it to fit the idle tier and move the ratios, as a
module enabled long before the load would have), on PG spreads
0..N-1, beside Ceph's defaults and best-static's pick on seed 0 (the grid
of run.best_static, searched on seed 0 as make bench-sim does).

It prints, per scenario, the primary metric (run.primary_metric) of each
column as the mean over the seeds, with the p99 write after the first
repeat where the scenario repeats writes; for each lead, the ratios the
module holds when the workload starts (seed 0), on how many seeds it is
at least as good as the pick, and seed 0's figures with make bench-sim's
verdict (its PASS rule; best-static is judged on seed 0).

The lead is the only difference between tiertune's columns: the same
module code, the same simulator, the same seed.
"""

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
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
from report import better_or_equal, emit, figure  # noqa: E402
from seeds import map_jobs, nan_if_none  # noqa: E402
from simulator.run import LEAD_IN_TICKS, simulate  # noqa: E402

DEFAULT_LEADS = (LEAD_IN_TICKS, 9)
DEFAULTS = 'static:0.4,0.6,0.8'

Ratios3 = Tuple[float, float, float]


@dataclass(frozen=True)
class Figures:
    primary: float                   # NaN: the run has no such figure
    after_first: float               # p99 write after the first repeat, or NaN
    start: Ratios3                   # the pool's ratios when the workload starts


def figures(sc: scn.Scenario, policy: str, seed: int,
            lead_ticks: int = LEAD_IN_TICKS) -> Figures:
    rec = simulate(sc, policies.parse(policy), seed=seed, lead_in_ticks=lead_ticks)
    r0 = rec.ratio_changes[0]
    return Figures(nan_if_none(rec.metrics.get(run.primary_metric(sc)[0])),
                   nan_if_none(rec.metrics.get('write_lat_ms_p99_after_first')),
                   (r0['dirty'], r0['dirty_high'], r0['full']))


# (scenario, policy, seed, lead ticks)
_RunJob = Tuple[scn.Scenario, str, int, int]


def _run_job(job: _RunJob) -> Figures:
    sc, policy, seed, lead = job
    return figures(sc, policy, seed, lead)


def column(lead: int) -> str:
    return f'tiertune, lead {lead * policies.TIERTUNE_SLEEP_INTERVAL_S:g} s'


@dataclass
class ScenarioRuns:
    sc: scn.Scenario
    pick: str                                   # best-static's pick on seed 0
    runs: Dict[str, List[Figures]]              # column -> per seed


def measure(scs: Sequence[scn.Scenario], leads: Sequence[int], seeds: int,
            jobs: int) -> List[ScenarioRuns]:
    picks = map_jobs(run.seed0_pick, list(scs), jobs)
    work: List[_RunJob] = []
    keys: List[Tuple[int, str]] = []
    for i, (sc, pick) in enumerate(zip(scs, picks, strict=True)):
        for seed in range(seeds):
            for name, policy, lead in ([('Ceph defaults', DEFAULTS, LEAD_IN_TICKS),
                                        ('best-static pick', pick, LEAD_IN_TICKS)]
                                       + [(column(v), 'tiertune', v) for v in leads]):
                work.append((sc, policy, seed, lead))
                keys.append((i, name))
    out = [ScenarioRuns(sc, pick, {}) for sc, pick in zip(scs, picks, strict=True)]
    for (i, name), fig in zip(keys, map_jobs(_run_job, work, jobs), strict=True):
        out[i].runs.setdefault(name, []).append(fig)
    return out


def _mean(xs: Sequence[float]) -> float:
    vals = [x for x in xs if not math.isnan(x)]
    return statistics.fmean(vals) if vals else math.nan


def report(results: Sequence[ScenarioRuns], leads: Sequence[int], seeds: int) -> str:
    cols = ['Ceph defaults', 'best-static pick'] + [column(v) for v in leads]
    lines = [
        '# tiertune meeting the workload cold and warm (simulator)',
        '',
        f'`tools/bench/warm_start.py --lead-ticks {",".join(str(v) for v in leads)} '
        f'--seeds {seeds}`; means over PG spreads 0..{seeds - 1}. Each cell: the primary '
        'metric (p99 write ms, or hit ratio where the scenario only reads), then in '
        'brackets the p99 write after the first repeat where it repeats writes. A lead is '
        'tiertune\'s ticks over the idle, empty tier before the workload starts; '
        f'{column(LEAD_IN_TICKS)} is the suite\'s protocol.',
        '',
        '| scenario | ' + ' | '.join(cols) + ' |',
        '|---|' + '---:|' * len(cols),
    ]
    notes: List[str] = []
    for r in results:
        lower = run.primary_metric(r.sc)[1]
        cells = []
        for c in cols:
            figs = r.runs[c]
            after = _mean([f.after_first for f in figs])
            cells.append(figure(_mean([f.primary for f in figs]))
                         + ('' if math.isnan(after) else f' ({figure(after)})'))
        lines.append(f'| {r.sc.name} | ' + ' | '.join(cells) + ' |')
        pick = r.runs['best-static pick']
        for v in leads:
            tt = r.runs[column(v)]
            wins = sum(bool(better_or_equal(a.primary, b.primary, lower))
                       for a, b in zip(tt, pick, strict=True))
            d, h, f = tt[0].start
            seed0 = better_or_equal(tt[0].primary, pick[0].primary, lower)
            notes.append(f'- {r.sc.name}, {column(v)}: starts the workload at '
                         f'{d:g}/{h:g}/{f:g}; at least as good as the pick '
                         f'({r.pick}) on {wins} of {len(tt)} seeds; seed 0 '
                         f'{tt[0].primary:.6g} against {pick[0].primary:.6g} '
                         f'({"PASS" if seed0 else "FAIL"})')
    return '\n'.join([*lines, '', *notes]) + '\n'


def _ints(text: str) -> List[int]:
    return [int(x) for x in text.split(',') if x.strip()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--lead-ticks', type=_ints, default=list(DEFAULT_LEADS))
    p.add_argument('--scenarios', default='', help='names, comma-separated (default: all)')
    p.add_argument('--seeds', type=int, default=1)
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--out', type=Path)
    a = p.parse_args(argv)
    if any(v < 1 for v in a.lead_ticks):
        p.error('--lead-ticks: each at least 1')
    try:
        scs = scn.load_shipped([n for n in a.scenarios.split(',') if n])
    except scn.ScenarioError as e:
        p.error(str(e))
    text = report(measure(scs, a.lead_ticks, a.seeds, a.jobs), a.lead_ticks, a.seeds)
    emit(text, a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
