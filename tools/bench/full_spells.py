"""How long single PGs stay FULL, on the local cluster and on the simulator.

    full_spells.py --scenario FILE [--policy P] [--record REC.json]
                   [--seeds N] [--out FILE.md] [--workdir DIR]

The simulator's calibration (calibrate.py) has its blocked-write seconds
short of the cluster's on the same scenario: the cluster's PGs stay FULL
longer.  This looks at the PGs one by one.  A PG is FULL while its evict
mode is full (num_evict_mode_full in its stat_sum: over its share of
target_max_*); writes to objects it does not hold wait until it leaves.

Without --record it runs the scenario under the policy (default Ceph's
static:0.4,0.6,0.8) on a fresh local cluster, with each cache PG's agent
modes and object counts read once a second (`pg ls-by-pool`), and writes
that record next to --out (or under --workdir).  Then it runs the same
scenario and policy on the simulator, seeds 0..N-1, each PG traced every
step.  Per run it prints:

  FULL PG-s     seconds PGs spent FULL, summed over the PGs
  spells        FULL spells (a PG entering FULL and leaving it)
  length        spell length: mean, median, longest (s)
  at entry      the PG's objects (of its budget) and dirty share of them
                at a spell's first sample
  blocked s     the record's blocked_write_s; wr p99 its write_lat_ms_p99

The cluster is sampled once a second and the mgr's PG stats are at most a
second old (cluster_backend's mgr_stats_period), so a cluster spell's length
is good to about 2 s; a spell shorter than a sample can be missed.
"""

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import scenario as scn  # noqa: E402
from record import RunRecord  # noqa: E402

DEFAULT_POLICY = 'static:0.4,0.6,0.8'
DEFAULT_SEEDS = 5

# (t, full, objects, dirty objects) of one PG
Point = Tuple[float, bool, float, float]


@dataclass
class Spell:
    start: float
    length: float
    objects: float               # at entry
    dirty: float                 # at entry


def spells(points: Sequence[Point], dt: float) -> List[Spell]:
    """FULL spells of one PG from its samples (in time order).  A spell
    ends at the first sample that is not FULL, so its length is the time
    between that sample and its first one; one still going when the trace
    ends runs to the last sample plus dt."""
    out: List[Spell] = []
    cur: Optional[Tuple[float, float, float]] = None
    for t, full, objects, dirty in points:
        if full and cur is None:
            cur = (t, objects, dirty)
        elif not full and cur is not None:
            out.append(Spell(cur[0], t - cur[0], cur[1], cur[2]))
            cur = None
    if cur is not None and points:
        out.append(Spell(cur[0], points[-1][0] + dt - cur[0], cur[1], cur[2]))
    return out


def all_spells(traces: Iterable[Tuple[Sequence[Point], int]], dt: float) -> List[Spell]:
    """The spells of every PG: (its points, how many PGs they stand for)."""
    return [sp for points, n in traces for sp in spells(points, dt) * n]


@dataclass
class Summary:
    label: str
    spells: List[Spell]
    budget: float
    blocked_s: Optional[float]
    p99_ms: Optional[float]

    @property
    def full_pg_s(self) -> float:
        return sum(s.length for s in self.spells)

    def row(self) -> str:
        ls = [s.length for s in self.spells]
        entry_fill = [s.objects / self.budget for s in self.spells]
        entry_dirty = [s.dirty / s.objects for s in self.spells if s.objects > 0]

        def f(v: Optional[float], fmt: str) -> str:
            return '-' if v is None else fmt.format(v)
        return ' | '.join([
            self.label, f'{self.full_pg_s:.0f}', str(len(ls)),
            f(statistics.fmean(ls) if ls else None, '{:.1f}'),
            f(statistics.median(ls) if ls else None, '{:.1f}'),
            f(max(ls) if ls else None, '{:.1f}'),
            f(statistics.fmean(entry_fill) if entry_fill else None, '{:.2f}'),
            f(statistics.fmean(entry_dirty) if entry_dirty else None, '{:.2f}'),
            f(self.blocked_s, '{:.0f}'), f(self.p99_ms, '{:.0f}')])


HEADER = ('| run | FULL PG-s | spells | mean s | median s | longest s | objects/budget '
          'at entry | dirty share at entry | blocked s | wr p99 ms |\n'
          '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')


def cluster_summary(rec: RunRecord) -> Summary:
    trace = rec.params.get('pg_trace')
    if not trace:
        raise ValueError('the record has no per-PG trace (cluster_backend.run(pg_trace=True))')
    fields = trace['fields']
    i_full, i_obj, i_dirty = (fields.index(k) for k in (
        'num_evict_mode_full', 'num_objects', 'num_objects_dirty'))
    per_pg: Dict[str, List[Point]] = {}
    for t, pgs in trace['samples']:
        for pgid, v in pgs.items():
            per_pg.setdefault(pgid, []).append((float(t), v[i_full] > 0, float(v[i_obj]),
                                                float(v[i_dirty])))
    return Summary('cluster', all_spells(((p, 1) for p in per_pg.values()), 1.0),
                   float(trace['budget_objects']),
                   rec.metrics.get('blocked_write_s'), rec.metrics.get('write_lat_ms_p99'))


def sim_summary(sc: scn.Scenario, policy: str, seed: int) -> Summary:
    from simulator.run import STEP_S, simulate
    from simulator.tier import EVICT_FULL, TierSim
    per_row: List[List[Point]] = []
    pgs_per_row: List[int] = []

    def observe(t: float, sim: TierSim) -> None:
        if not per_row:
            per_row.extend([] for _ in range(sim.G))
            pgs_per_row.extend(round(m) for m in sim.m)
        clean, dirty = sim.objects()
        for g in range(sim.G):
            per_row[g].append((t, bool(sim.evict_mode[g] == EVICT_FULL),
                               float(clean[g] + dirty[g]), float(dirty[g])))
    rec = simulate(sc, policies.parse(policy), seed=seed, observe=observe)
    budget = sc.target_max_bytes / sc.pg_num / sc.object_size
    # A row stands for sim.m PGs alike (simulator.tier PG_CLASSES).
    traced = all_spells(zip(per_row, pgs_per_row, strict=True), STEP_S)
    return Summary(f'sim seed {seed}', traced, budget,
                   rec.metrics.get('blocked_write_s'), rec.metrics.get('write_lat_ms_p99'))


def report(sc: scn.Scenario, policy: str, rec: RunRecord, seeds: int) -> str:
    rows = [cluster_summary(rec)] + [sim_summary(sc, policy, s) for s in range(seeds)]
    return '\n'.join([f'# FULL spells of single PGs: {sc.name}, {policy}', '',
                      '`tools/bench/full_spells.py`; see its docstring.', '', HEADER]
                     + [f'| {r.row()} |' for r in rows]) + '\n'


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='full_spells.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scenario', required=True, type=Path)
    ap.add_argument('--policy', default=DEFAULT_POLICY)
    ap.add_argument('--record', type=Path, help='a cluster record with a per-PG trace')
    ap.add_argument('--seeds', type=int, default=DEFAULT_SEEDS)
    ap.add_argument('--out', type=Path)
    ap.add_argument('--workdir', type=Path, default=Path('/tmp/tiertune-bench'))
    a = ap.parse_args(argv)
    try:
        sc = scn.load(a.scenario)
        if policies.parse(a.policy).kind not in ('static', 'tiertune'):
            raise policies.PolicyError(f'{a.policy}: static:D,H,F or tiertune')
        if a.record is not None:
            rec = RunRecord.read(a.record)
        else:
            import cluster_backend
            rec = cluster_backend.run(sc, a.policy, a.workdir, pg_trace=True)
            where = (a.out.with_suffix('.json') if a.out is not None
                     else a.workdir / f'{sc.name}-pg-trace.json')
            rec.write(where)
            print(f'full_spells.py: cluster record in {where}', file=sys.stderr)
        text = report(sc, a.policy, rec, a.seeds)
    except (scn.ScenarioError, policies.PolicyError, ValueError, OSError,
            json.JSONDecodeError) as e:
        print(f'full_spells.py: {e}', file=sys.stderr)
        return 2
    print(text, end='')
    if a.out is not None:
        a.out.write_text(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
