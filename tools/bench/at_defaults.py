"""tiertune at the module's defaults, beside the benchmarks' settings, Ceph's
defaults and best-static's pick, on every shipped scenario (simulator).

    at_defaults.py [--scenarios a,b] [--jobs J] [--out FILE.md]

make bench-sim runs tiertune as the benchmarks set it up
(policies.BENCH_CONFIG): a tick every 10 s and min_interval_s 0, so the
rate limit is the scenarios' 60 s hit_set_period.  An operator who only
runs `ceph mgr module enable tiertune` and `ceph tiertune mode <pool> on`
gets the module's defaults (policies.DEFAULTS_CONFIG): a tick every 30 s
and min_interval_s 600, at most one change in 10 minutes.  The scenarios
are minutes long, so that is a different module on them.  This runs both,
on seed 0 (PG spread 0, as make bench-sim does), in one run, with the
same simulator and module code: the configuration is the only difference
between the two tiertune columns.

Each cell: the scenario's primary metric (run.primary_metric: p99 write
ms where it writes, hit ratio where it only reads), the mean throughput
(MiB/s) and the ratio changes made.  Then, per scenario, make bench-sim's
verdict rule against the pick (at least as good on the primary metric)
for each tiertune column.
"""

import argparse
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
from simulator.run import simulate  # noqa: E402

DEFAULTS = 'static:0.4,0.6,0.8'
# (column, policy; None: best-static's pick)
COLUMNS: Tuple[Tuple[str, Optional[str]], ...] = (
    ('Ceph defaults', DEFAULTS),
    ('best-static pick', None),
    ('tiertune, bench settings', 'tiertune'),
    ('tiertune, module defaults', 'tiertune-defaults'),
)


@dataclass(frozen=True)
class Figures:
    primary: float          # NaN: the run has no such figure
    throughput: float
    changes: int


def figures(sc: scn.Scenario, policy: str) -> Figures:
    rec = simulate(sc, policies.parse(policy), seed=0)
    m = rec.metrics
    return Figures(nan_if_none(m.get(run.primary_metric(sc)[0])),
                   nan_if_none(m.get('throughput_mib_s_mean')), int(m['ratio_changes']))


def _run_job(job: Tuple[scn.Scenario, str]) -> Figures:
    return figures(*job)


def measure(scs: Sequence[scn.Scenario], jobs: int
            ) -> List[Tuple[scn.Scenario, str, Dict[str, Figures]]]:
    picks = map_jobs(run.seed0_pick, list(scs), jobs)
    work = [(sc, policy or pick) for sc, pick in zip(scs, picks, strict=True)
            for _, policy in COLUMNS]
    done = map_jobs(_run_job, work, jobs)
    n = len(COLUMNS)
    return [(sc, pick, {name: done[i * n + j] for j, (name, _) in enumerate(COLUMNS)})
            for i, (sc, pick) in enumerate(zip(scs, picks, strict=True))]


def report(results: Sequence[Tuple[scn.Scenario, str, Dict[str, Figures]]],
           argv: Sequence[str]) -> str:
    bench, dflt = policies.BENCH_CONFIG, policies.DEFAULTS_CONFIG
    lines = [
        '# tiertune at the module\'s defaults and at the benchmarks\' settings (simulator)',
        '',
        '`tools/bench/at_defaults.py' + ''.join(f' {a}' for a in argv) + '`, seed 0. '
        f'Bench settings: a tick every {bench.sleep_interval_s:g} s, '
        + (', '.join(f'{k} {v:g}' for k, v in bench.settings.items()) or 'no settings')
        + f'; module defaults: a tick every {dflt.sleep_interval_s:g} s, every bound and '
        'knob at its default (min_interval_s 600). Each cell: the primary metric (p99 '
        'write ms, or hit ratio where the scenario only reads) / mean MiB/s / ratio '
        'changes.',
        '',
        '| scenario | ' + ' | '.join(name for name, _ in COLUMNS) + ' |',
        '|---|' + '---:|' * len(COLUMNS),
    ]
    notes: List[str] = []
    for sc, pick, figs in results:
        cells = [f'{figure(f.primary)} / {f.throughput:.1f} / {f.changes}'
                 for f in (figs[name] for name, _ in COLUMNS)]
        lines.append(f'| {sc.name} | ' + ' | '.join(cells) + ' |')
        lower = run.primary_metric(sc)[1]
        best = figs['best-static pick']
        verdicts = []
        for name in ('tiertune, bench settings', 'tiertune, module defaults'):
            ok = better_or_equal(figs[name].primary, best.primary, lower)
            verdicts.append(f'{name} {"PASS" if ok else "FAIL"}')
        notes.append(f'- {sc.name}: best-static pick {pick}; ' + ', '.join(verdicts))
    return '\n'.join([*lines, '', *notes]) + '\n'


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--scenarios', default='', help='names, comma-separated (default: all)')
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--out', type=Path)
    args = list(sys.argv[1:] if argv is None else argv)
    a = p.parse_args(args)
    try:
        scs = scn.load_shipped([n for n in a.scenarios.split(',') if n])
    except scn.ScenarioError as e:
        p.error(str(e))
    shown = [x for x in args if not x.startswith('--out') and x != str(a.out)]
    emit(report(measure(scs, a.jobs), shown), a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
