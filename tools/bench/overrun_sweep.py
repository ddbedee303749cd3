"""Where dirty_high should sit while write surges overrun the cache: the
law's OVERRUN_LOW_LANDING swept on the simulator, against the cache's speed.

    overrun_sweep.py [--landing 0.2,0.3] [--cache-mib-s 200,300,450,750]
                     [--seeds N] [--jobs J] [--out FILE.md]

While the surges seen overrun the cache, the law puts dirty_high at
dirty_ratio_min + OVERRUN_LOW_LANDING (law.py): the next surge lands that
much of the target with LOW flushing (which evicts more clean objects per
completed flush: room opens fast) before its PGs flush HIGH (fewer: clean
data lasts into the FULL spells).  Until session 19 it was 0.2 (dirty_high
at its default floor, 0.3).  On the local cluster that cost on a bench that
only just overruns the cache and gained on one four times the cache; the
cluster's cache had got faster in between.  This runs the two cluster
scenarios (osiris-rados-bench-4m-cluster, overflow-4m-fio-cluster) with the
simulator's cache bandwidth set to each --cache-mib-s, and the shipped
scenarios that overrun the cache at their own speeds, under Ceph's defaults
and under tiertune with each landing value, on PG spreads (seeds)
0..N-1.  It prints, per scenario, the means over the seeds of the p99 write
latency after the first repeat (tiertune first acts after it on the
cluster scenarios) and over the whole run.

The landing value is set on the module's own law (tiertune.law, as the
simulator loads it) for each run, in the worker that runs it, and put back
after: the simulator still drives the module's code, not a copy.
"""

import argparse
import contextlib
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import scenario as scn  # noqa: E402
from report import emit  # noqa: E402
from seeds import map_jobs, nan_if_none  # noqa: E402
from simulator.run import simulate  # noqa: E402

CLUSTER_SCENARIOS = ('osiris-rados-bench-4m', 'overflow-4m-fio')
SHIPPED_SCENARIOS = ('bursty-write-exceeds', 'osiris-rados-bench-4m-overflow')
DEFAULT_LANDINGS = (0.2, 0.25, 0.3, 0.35, 0.4)
DEFAULT_CACHE_MIB_S = (200.0, 300.0, 450.0, 750.0)
DEFAULTS = 'static:0.4,0.6,0.8'

# (scenario label, scenario, policy text, landing or None, seed)
Job = Tuple[str, scn.Scenario, str, Optional[float], int]
# p99 write after the first repeat, p99 write (ms)
Figures = Tuple[float, float]


def _law_module() -> Any:
    policies.tiertune_package()
    return sys.modules['tiertune.law']


@contextlib.contextmanager
def landing_set(landing: Optional[float]) -> Iterator[None]:
    """The module's law with OVERRUN_LOW_LANDING at `landing` (None: as it
    is) while the block runs, put back after."""
    law = _law_module()
    kept = law.OVERRUN_LOW_LANDING
    if landing is not None:
        law.OVERRUN_LOW_LANDING = landing
    try:
        yield
    finally:
        law.OVERRUN_LOW_LANDING = kept


def law_landing() -> float:
    """The landing value the module's law has now."""
    return float(_law_module().OVERRUN_LOW_LANDING)


def run_one(sc: scn.Scenario, policy: str, landing: Optional[float], seed: int) -> Figures:
    with landing_set(landing):
        m = simulate(sc, policies.parse(policy), seed=seed).metrics
    after = m.get('write_lat_ms_p99_after_first')
    p99 = m.get('write_lat_ms_p99')
    return nan_if_none(after), nan_if_none(p99)


def _job(job: Job) -> Figures:
    _, sc, policy, landing, seed = job
    return run_one(sc, policy, landing, seed)


def with_cache_speed(sc: scn.Scenario, mib_s: float) -> scn.Scenario:
    return dataclasses.replace(
        sc, name=f'{sc.name}@{mib_s:g}',
        sim=dataclasses.replace(sc.sim, cache_bandwidth_mib_s=mib_s))


def scenarios(cache_speeds: Sequence[float]) -> List[Tuple[str, scn.Scenario]]:
    out: List[Tuple[str, scn.Scenario]] = []
    for name in CLUSTER_SCENARIOS:
        base = scn.load(HERE / 'scenarios' / 'cluster' / f'{name}.yaml')
        for mib_s in cache_speeds:
            out.append((f'{base.name}, cache {mib_s:g} MiB/s', with_cache_speed(base, mib_s)))
    shipped = scn.shipped()
    for name in SHIPPED_SCENARIOS:
        sc = scn.load(shipped[name])
        out.append((f'{sc.name}, cache {sc.sim.cache_bandwidth_mib_s:g} MiB/s', sc))
    return out


def sweep(scs: Sequence[Tuple[str, scn.Scenario]], landings: Sequence[float], seeds: int,
          jobs: int) -> Dict[Tuple[str, str], List[Figures]]:
    """{(scenario label, column): figures per seed}; columns are 'defaults'
    and 'landing L'."""
    work: List[Job] = []
    for label, sc in scs:
        for seed in range(seeds):
            work.append((label, sc, DEFAULTS, None, seed))
            for landing in landings:
                work.append((label, sc, 'tiertune', landing, seed))
    results = map_jobs(_job, work, jobs)
    out: Dict[Tuple[str, str], List[Figures]] = {}
    for (label, _, _, value, _), fig in zip(work, results, strict=True):
        out.setdefault((label, column(value)), []).append(fig)
    return out


def column(landing: Optional[float]) -> str:
    return 'defaults' if landing is None else f'landing {landing:g}'


def _mean(xs: Sequence[float]) -> str:
    vals = [x for x in xs if x == x]
    return f'{statistics.fmean(vals):.0f}' if vals else '-'


def report(scs: Sequence[Tuple[str, scn.Scenario]], landings: Sequence[float], seeds: int,
           res: Dict[Tuple[str, str], List[Figures]]) -> str:
    cols = [column(None)] + [column(v) for v in landings]
    law = law_landing()
    head = [f'{c} (the law)' if c == column(law) else c for c in cols]
    lines = [
        '# dirty_high while surges overrun the cache: OVERRUN_LOW_LANDING swept (simulator)',
        '',
        f'`tools/bench/overrun_sweep.py --landing {",".join(f"{v:g}" for v in landings)} '
        f'--seeds {seeds}`; means over PG spreads 0..{seeds - 1}, ms. Each cell: p99 write '
        'after the first repeat / p99 write of the whole run.',
        '',
        '| scenario | ' + ' | '.join(head) + ' |',
        '|---|' + '---:|' * len(cols),
    ]
    for label, _ in scs:
        cells = []
        for c in cols:
            figs = res[(label, c)]
            cells.append(f'{_mean([f[0] for f in figs])} / {_mean([f[1] for f in figs])}')
        lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def _floats(text: str) -> List[float]:
    return [float(x) for x in text.split(',') if x.strip()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--landing', type=_floats, default=list(DEFAULT_LANDINGS))
    p.add_argument('--cache-mib-s', type=_floats, default=list(DEFAULT_CACHE_MIB_S))
    p.add_argument('--seeds', type=int, default=5)
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--out', type=Path)
    a = p.parse_args(argv)
    scs = scenarios(a.cache_mib_s)
    text = report(scs, a.landing, a.seeds, sweep(scs, a.landing, a.seeds, a.jobs))
    emit(text, a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
