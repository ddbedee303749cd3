"""Does the hindsight best static setting stay best?  The simulator suite on
several PG hash spreads (seeds).

    seeds.py [--seeds N] [--scenarios a,b] [--out FILE.md]

`make bench-sim` runs every scenario on one spread of objects over PGs (seed
0): which PGs are fuller, and so reach a ratio or FULL first.  best-static is
the best of a 42-point grid on that very run, so it is tuned to that spread
as well as to the workload.  Here each scenario runs on seeds 0..N-1 under:

  tiertune
  Ceph's defaults (static:0.4,0.6,0.8)
  seed-0 pick     the ratios best-static picks on seed 0, run on every seed
                  (on seeds 1.. an operator's choice made on another day)
  per-seed best   the grid searched again on each seed (hindsight on that
                  very run: the strict bar)

Both picks are run.best_static's: the grid's best on the primary metric
among the settings that keep 0.95x Ceph defaults' mean throughput.

and prints, per scenario, the primary metric (as run.py's primary_metric)
on each seed, then on how many seeds tiertune is at least as good as each
static policy (exact comparison, no tolerance) and the mean over seeds.
"""

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import policies  # noqa: E402
import run  # noqa: E402
import scenario as scn  # noqa: E402

DEFAULT_SEEDS = 5
DEFAULTS = 'static:0.4,0.6,0.8'
COLUMNS = ('tiertune', 'Ceph defaults', 'seed-0 pick', 'per-seed best')


def _primary(rec: 'run.RunRecord', sc: scn.Scenario) -> float:
    v = rec.metrics.get(run.primary_metric(sc)[0])
    return float('nan') if v is None else float(v)


def scenario_rows(sc: scn.Scenario, seeds: int) -> Tuple[List[Dict[str, float]], str,
                                                          List[str]]:
    """Per seed: the primary metric under each of COLUMNS; the seed-0 pick's
    policy name; the per-seed picks' names."""
    from simulator.run import simulate
    rows: List[Dict[str, float]] = []
    picks: List[str] = []
    seed0_pick: Optional[policies.PolicySpec] = None
    for seed in range(seeds):
        best = run.best_static(sc, lambda m: None, seed=seed)
        picks.append(best.params['best_static'])
        if seed0_pick is None:
            seed0_pick = policies.parse(best.params['best_static'])
        rows.append({
            'tiertune': _primary(simulate(sc, policies.parse('tiertune'), seed=seed), sc),
            'Ceph defaults': _primary(simulate(sc, policies.parse(DEFAULTS), seed=seed), sc),
            'seed-0 pick': _primary(simulate(sc, seed0_pick, seed=seed), sc),
            'per-seed best': _primary(best, sc)})
    return rows, picks[0], picks


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


def report(names: Sequence[str], seeds: int) -> str:
    shipped = scn.shipped()
    out = [f'# tiertune against static settings on {seeds} PG hash spreads (simulator)', '',
           f'`make bench-sim-seeds` (tools/bench/seeds.py --seeds {seeds}); see its docstring.',
           '']
    for name in names:
        sc = scn.load(shipped.get(name) or Path(name))
        key, lower = run.primary_metric(sc)
        rows, pick0, picks = scenario_rows(sc, seeds)
        fmt = '{:.1f}' if lower else '{:.4f}'
        out += [f'## {sc.name}', '',
                f'Primary metric: {key} ({"lower" if lower else "higher"} is better). '
                f'Seed-0 pick: {pick0}.', '',
                '| seed | ' + ' | '.join(COLUMNS) + ' | per-seed pick |',
                '|---:|' + '---:|' * len(COLUMNS) + '---|']
        for seed, (row, pick) in enumerate(zip(rows, picks, strict=True)):
            out.append(f'| {seed} | ' + ' | '.join(fmt.format(row[c]) for c in COLUMNS)
                       + f' | {pick} |')
        mean = {c: sum(r[c] for r in rows) / len(rows) for c in COLUMNS}
        out.append('| mean | ' + ' | '.join(fmt.format(mean[c]) for c in COLUMNS) + ' | |')
        out.append('')
        for other in COLUMNS[1:]:
            # The seed-0 pick is judged where it was not picked.
            held = rows[1:] if other == 'seed-0 pick' else rows
            wins = sum(_at_least_as_good(r['tiertune'], r[other], lower) for r in held)
            where = f'seeds 1..{seeds - 1}' if other == 'seed-0 pick' else 'seeds'
            tt, ot = (sum(r[c] for r in held) / len(held) for c in ('tiertune', other))
            out.append(f'- tiertune at least as good as {other}: {wins} of {len(held)} {where}; '
                       f'mean over them {fmt.format(tt)} vs {fmt.format(ot)} '
                       f'({_verdict(tt, ot, lower)})')
        out.append('')
    return '\n'.join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='seeds.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seeds', type=int, default=DEFAULT_SEEDS)
    ap.add_argument('--scenarios', default='')
    ap.add_argument('--out', type=Path)
    a = ap.parse_args(argv)
    if a.seeds < 2:
        print('seeds.py: --seeds must be at least 2 (seed 0 picks, the others test)',
              file=sys.stderr)
        return 2
    names = [s for s in a.scenarios.split(',') if s] or list(scn.shipped())
    try:
        text = report(names, a.seeds)
    except (scn.ScenarioError, policies.PolicyError) as e:
        print(f'seeds.py: {e}', file=sys.stderr)
        return 2
    print(text)
    if a.out:
        a.out.write_text(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
