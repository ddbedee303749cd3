"""Does the hindsight best static setting stay best?  The simulator suite on
several PG hash spreads (seeds).

    seeds.py [--seeds N] [--held-out K] [--scenarios a,b] [--jobs J] [--out FILE.md]

`make bench-sim` runs every scenario on one spread of objects over PGs (seed
0): which PGs are fuller, and so reach a ratio or FULL first.  best-static is
the best of a 42-point grid on that very run, so it is tuned to that spread
as well as to the workload.  Here each scenario runs on seeds 0..N-1, the
whole grid and tiertune on each, and the report compares tiertune with:

  Ceph defaults   static:0.4,0.6,0.8
  seed-0 pick     the ratios best-static picks on seed 0, run on every seed
                  (on seeds 1.. an operator's choice made on another day)
  per-seed best   the grid searched again on each seed (hindsight on that
                  very run: the strict bar)
  best on mean    the grid point with the best mean over all N seeds
                  (hindsight on the workload, not on one spread)

The picks are run.best_static's rule: the best primary metric among the
settings that keep 0.95x Ceph defaults' mean throughput (for the best on
mean: mean throughput over the seeds against the defaults' mean).

It prints, per scenario, the primary metric (as run.py's primary_metric)
on each seed, on how many seeds tiertune is at least as good as each static
policy (exact comparison, no tolerance) and the means over seeds.  Against
the best on mean it also gives the paired difference (tiertune minus it,
seed by seed) with its standard error, and tiertune's place among the 42
settings' means: a lead of under two standard errors is within what the
spread alone moves.  Where the scenario writes and repeats, it compares the
p99 write of the writes after the first repeat too, against Ceph's
defaults and the best on mean (the grid point picked on the whole run):
tiertune starts every run at Ceph's defaults and learns the workload in
the first repeat, while a static setting has its ratios from the start.

The best on mean is picked on the very seeds it is judged on: the best of
42 settings' means carries their spread's luck as well as the workload's
answer.  With --held-out K the picks (seed-0 pick, best on mean) and
Ceph's defaults run again beside tiertune on seeds N..N+K-1, which no pick
saw, and the report compares them there, seed by seed.
"""

import argparse
import math
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import run  # noqa: E402
import scenario as scn  # noqa: E402
from report import emit, meets_throughput_floor  # noqa: E402

DEFAULT_SEEDS = 5
DEFAULTS = 'static:0.4,0.6,0.8'
COLUMNS = ('tiertune', 'Ceph defaults', 'seed-0 pick', 'per-seed best', 'best on mean')

Ratios3 = Tuple[float, float, float]
_Job = TypeVar('_Job')
_Result = TypeVar('_Result')


@dataclass
class SeedRun:
    """One seed of one scenario: every grid point and tiertune."""
    grid: Dict[Ratios3, Tuple[float, float]]     # ratios -> (primary, throughput)
    pick: Ratios3                                 # best_static's pick on this seed
    tiertune: float
    # p99 write after the first repeat (NaN: no writes after it, or one
    # repeat): tiertune's, and per grid point
    tiertune_after_first: float = math.nan
    grid_after_first: Dict[Ratios3, float] = field(default_factory=dict)


@dataclass
class HeldOutRun:
    """One seed no pick was made on: tiertune and the static picks."""
    seed: int
    tiertune: Tuple[float, float]                 # (primary, p99 write after the first repeat)
    static: Dict[Ratios3, Tuple[float, float]]   # ratios -> the same two


@dataclass
class ScenarioSeeds:
    runs: List[SeedRun]
    lower: bool
    held_out: List[HeldOutRun] = field(default_factory=list)

    def picks(self) -> Dict[str, Ratios3]:
        """The static policies judged on the held-out seeds."""
        return {'Ceph defaults': policies.CEPH_DEFAULTS, 'seed-0 pick': self.runs[0].pick,
                'best on mean': self.mean_pick}

    def value(self, seed: int, column: str) -> float:
        r = self.runs[seed]
        if column == 'tiertune':
            return r.tiertune
        ratios = r.pick if column == 'per-seed best' else self.picks()[column]
        return r.grid[ratios][0]

    def row(self, seed: int) -> Dict[str, float]:
        return {c: self.value(seed, c) for c in COLUMNS}

    @cached_property
    def means(self) -> Dict[Ratios3, Tuple[float, float]]:
        """Per grid point: (mean primary, mean throughput) over the seeds."""
        n = len(self.runs)
        return {k: (sum(r.grid[k][0] for r in self.runs) / n,
                    sum(r.grid[k][1] for r in self.runs) / n) for k in self.runs[0].grid}

    @cached_property
    def mean_pick(self) -> Ratios3:
        means = self.means
        floor = means[policies.CEPH_DEFAULTS][1]
        eligible = [k for k, (_, tput) in means.items() if meets_throughput_floor(tput, floor)]
        sign = 1.0 if self.lower else -1.0
        return min(eligible, key=lambda k: (sign * means[k][0], -means[k][1]))

    def settings_beaten(self) -> int:
        """How many grid points' means tiertune's mean is at least as good as."""
        tt = statistics.fmean(r.tiertune for r in self.runs)
        return sum(_at_least_as_good(tt, m, self.lower) for m, _ in self.means.values())


def _ratios3(r: Sequence[float]) -> Ratios3:
    d, h, f = r
    return (float(d), float(h), float(f))


def nan_if_none(v: Optional[float]) -> float:
    return float('nan') if v is None else float(v)


def _primary(rec: 'run.RunRecord', sc: scn.Scenario) -> float:
    return nan_if_none(rec.metrics.get(run.primary_metric(sc)[0]))


def _primary_and_after_first(sc: scn.Scenario, policy: policies.PolicySpec,
                             seed: int) -> Tuple[float, float]:
    from simulator.run import simulate
    rec = simulate(sc, policy, seed=seed)
    return _primary(rec, sc), nan_if_none(rec.metrics.get('write_lat_ms_p99_after_first'))


def seed_run(sc: scn.Scenario, seed: int) -> SeedRun:
    best = run.best_static(sc, lambda m: None, seed=seed)
    grid = {_ratios3(t['ratios']): (math.nan if t['primary'] is None else float(t['primary']),
                                 t['throughput'])
            for t in best.params['grid']}
    pick = policies.parse(best.params['best_static']).ratios
    assert pick is not None
    tt, tt_after_first = _primary_and_after_first(sc, policies.parse('tiertune'), seed)
    return SeedRun(grid=grid, pick=pick, tiertune=tt, tiertune_after_first=tt_after_first,
                   grid_after_first={_ratios3(t['ratios']): nan_if_none(t.get('after_first'))
                                     for t in best.params['grid']})


def _seed_run_job(job: Tuple[scn.Scenario, int]) -> SeedRun:
    return seed_run(*job)


def held_out_run(sc: scn.Scenario, seed: int, picks: Sequence[Ratios3]) -> HeldOutRun:
    return HeldOutRun(
        seed=seed, tiertune=_primary_and_after_first(sc, policies.parse('tiertune'), seed),
        static={r: _primary_and_after_first(sc, policies.PolicySpec('static', r), seed)
                for r in dict.fromkeys(picks)})


def _held_out_job(job: Tuple[scn.Scenario, int, Sequence[Ratios3]]) -> HeldOutRun:
    return held_out_run(*job)


def map_jobs(fn: Callable[[_Job], _Result], work: Sequence[_Job], jobs: int) -> List[_Result]:
    if jobs > 1 and len(work) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            return list(ex.map(fn, work))
    return [fn(w) for w in work]


def scenario_seeds(scs: Sequence[scn.Scenario], seeds: int, jobs: int = 1,
                   held_out: int = 0) -> List[ScenarioSeeds]:
    """Every (scenario, seed) run, spread over `jobs` processes: the runs are
    independent and deterministic, so the result does not depend on jobs.
    Then, once the picks are known, the held-out seeds."""
    work = [(sc, seed) for sc in scs for seed in range(seeds)]
    done = map_jobs(_seed_run_job, work, jobs)
    out = [ScenarioSeeds(done[i * seeds:(i + 1) * seeds], run.primary_metric(sc)[1])
           for i, sc in enumerate(scs)]
    if held_out > 0:
        later = [(sc, seed, list(ss.picks().values())) for sc, ss in zip(scs, out, strict=True)
                 for seed in range(seeds, seeds + held_out)]
        runs = map_jobs(_held_out_job, later, jobs)
        for i, ss in enumerate(out):
            ss.held_out = runs[i * held_out:(i + 1) * held_out]
    return out


def _name(r: Ratios3) -> str:
    return policies.PolicySpec('static', r).name


def _at_least_as_good(tt: float, other: float, lower: bool) -> bool:
    return tt <= other if lower else tt >= other


def _verdict(tt: float, other: float, lower: bool) -> str:
    """tiertune's mean against another's, in words: the metric's direction
    differs between scenarios, a signed percentage would not say which is
    better."""
    if tt == other or not other:
        return 'equal'
    gap = abs(tt - other) / abs(other) * 100.0
    better = tt < other if lower else tt > other
    return f'tiertune {gap:.1f}% {"better" if better else "worse"}'


def paired(tt: Sequence[float], other: Sequence[float]) -> Tuple[float, float]:
    """Mean and standard error of tt - other, seed by seed."""
    d = [a - b for a, b in zip(tt, other, strict=True)]
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return statistics.fmean(d), se


def _section(sc: scn.Scenario, ss: ScenarioSeeds) -> List[str]:
    key, lower = run.primary_metric(sc)
    seeds = len(ss.runs)
    fmt = '{:.1f}' if lower else '{:.4f}'
    rows = [ss.row(s) for s in range(seeds)]
    out = [f'## {sc.name}', '',
           f'Primary metric: {key} ({"lower" if lower else "higher"} is better). '
           f'Seed-0 pick: {_name(ss.runs[0].pick)}. Best on mean: {_name(ss.mean_pick)}.',
           '',
           '| seed | ' + ' | '.join(COLUMNS) + ' | per-seed pick |',
           '|---:|' + '---:|' * len(COLUMNS) + '---|']
    for seed, row in enumerate(rows):
        out.append(f'| {seed} | ' + ' | '.join(fmt.format(row[c]) for c in COLUMNS)
                   + f' | {_name(ss.runs[seed].pick)} |')
    mean = {c: sum(r[c] for r in rows) / len(rows) for c in COLUMNS}
    out += ['| mean | ' + ' | '.join(fmt.format(mean[c]) for c in COLUMNS) + ' | |', '']
    for other in COLUMNS[1:]:
        # The seed-0 pick is judged where it was not picked.
        held = rows[1:] if other == 'seed-0 pick' else rows
        wins = sum(_at_least_as_good(r['tiertune'], r[other], lower) for r in held)
        where = f'seeds 1..{seeds - 1}' if other == 'seed-0 pick' else 'seeds'
        tt, ot = (sum(r[c] for r in held) / len(held) for c in ('tiertune', other))
        out.append(f'- tiertune at least as good as {other}: {wins} of {len(held)} {where}; '
                   f'mean over them {fmt.format(tt)} vs {fmt.format(ot)} '
                   f'({_verdict(tt, ot, lower)})')
    d, se = paired([r['tiertune'] for r in rows], [r['best on mean'] for r in rows])
    out += [f'- tiertune minus best on mean, seed by seed: {fmt.format(d)} '
            f'(standard error {fmt.format(se)}; {"lower" if lower else "higher"} is better)']
    out += _after_first_lines(ss, fmt)
    out += [f'- tiertune\'s mean is at least as good as {ss.settings_beaten()} of the '
            f'{len(ss.runs[0].grid)} static settings\' means', '']
    return out + _held_out_lines(ss, fmt)


def _held_out_lines(ss: ScenarioSeeds, fmt: str) -> List[str]:
    """The picks against tiertune on seeds none of them was picked on."""
    if not ss.held_out:
        return []
    picks = ss.picks()
    first, last = ss.held_out[0].seed, ss.held_out[-1].seed
    out = [f'Held out: seeds {first}..{last}, which no pick saw.', '',
           '| seed | tiertune | ' + ' | '.join(picks) + ' |',
           '|---:|---:|' + '---:|' * len(picks)]
    for h in ss.held_out:
        out.append(f'| {h.seed} | {fmt.format(h.tiertune[0])} | '
                   + ' | '.join(fmt.format(h.static[r][0]) for r in picks.values()) + ' |')
    out.append('')
    tt = [h.tiertune[0] for h in ss.held_out]
    for name, r in picks.items():
        other = [h.static[r][0] for h in ss.held_out]
        wins = sum(_at_least_as_good(a, b, ss.lower) for a, b in zip(tt, other, strict=True))
        d, se = paired(tt, other)
        mean_tt, mean_other = statistics.fmean(tt), statistics.fmean(other)
        out.append(f'- held out, tiertune at least as good as {name} ({_name(r)}): {wins} of '
                   f'{len(tt)} seeds; mean {fmt.format(mean_tt)} vs {fmt.format(mean_other)} '
                   f'({_verdict(mean_tt, mean_other, ss.lower)}); '
                   f'tiertune minus it {fmt.format(d)} (standard error {fmt.format(se)})')
    tt_after = [h.tiertune[1] for h in ss.held_out]
    if not any(math.isnan(v) for v in tt_after):
        r = picks['best on mean']
        other = [h.static[r][1] for h in ss.held_out]
        d, se = paired(tt_after, other)
        out.append(f'- held out, after the first repeat (p99 write): tiertune minus best on '
                   f'mean {fmt.format(d)} (standard error {fmt.format(se)}); means '
                   f'{fmt.format(statistics.fmean(tt_after))} vs '
                   f'{fmt.format(statistics.fmean(other))}')
    return [*out, '']


def _after_first_lines(ss: ScenarioSeeds, fmt: str) -> List[str]:
    """The same comparisons over the writes after the first repeat (p99
    write), for scenarios with a figure there: tiertune starts at Ceph's
    defaults and learns in the first repeat, the static settings do not."""
    tt = [r.tiertune_after_first for r in ss.runs]
    if any(math.isnan(v) for v in tt):
        return []
    out = []
    for name, ratios in (('Ceph defaults', policies.CEPH_DEFAULTS),
                         ('best on mean', ss.mean_pick)):
        other = [r.grid_after_first.get(ratios, math.nan) for r in ss.runs]
        if any(math.isnan(v) for v in other):
            continue
        wins = sum(_at_least_as_good(a, b, True) for a, b in zip(tt, other, strict=True))
        d, se = paired(tt, other)
        out.append(f'- after the first repeat (p99 write): tiertune at least as good as {name} '
                   f'({_name(ratios)}) on {wins} of {len(tt)} seeds; mean '
                   f'{fmt.format(statistics.fmean(tt))} vs {fmt.format(statistics.fmean(other))}'
                   f', tiertune minus it {fmt.format(d)} (standard error {fmt.format(se)})')
    return out


def report(names: Sequence[str], seeds: int, jobs: int = 1, held_out: int = 0) -> str:
    shipped = scn.shipped()
    scs = [scn.load(shipped.get(name) or Path(name)) for name in names]
    more = f' and {held_out} held out' if held_out else ''
    out = [f'# tiertune against static settings on {seeds} PG hash spreads{more} (simulator)',
           '',
           f'`make bench-sim-seeds SEEDS={seeds} HELD_OUT={held_out}` (tools/bench/seeds.py '
           f'--seeds {seeds} --held-out {held_out}); see its docstring.', '']
    for sc, ss in zip(scs, scenario_seeds(scs, seeds, jobs, held_out), strict=True):
        out += _section(sc, ss)
    return '\n'.join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='seeds.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seeds', type=int, default=DEFAULT_SEEDS)
    ap.add_argument('--held-out', type=int, default=0,
                    help='seeds after the N to judge the picks on (default 0)')
    ap.add_argument('--scenarios', default='')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                    help='processes to run the seeds in (default: one per CPU)')
    ap.add_argument('--out', type=Path)
    a = ap.parse_args(argv)
    if a.seeds < 2:
        print('seeds.py: --seeds must be at least 2 (seed 0 picks, the others test)',
              file=sys.stderr)
        return 2
    if a.jobs < 1:
        print('seeds.py: --jobs must be at least 1', file=sys.stderr)
        return 2
    if a.held_out < 0:
        print('seeds.py: --held-out must not be negative', file=sys.stderr)
        return 2
    names = [s for s in a.scenarios.split(',') if s] or list(scn.shipped())
    try:
        text = report(names, a.seeds, a.jobs, a.held_out)
    except (scn.ScenarioError, policies.PolicyError) as e:
        print(f'seeds.py: {e}', file=sys.stderr)
        return 2
    emit(text + '\n', a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
