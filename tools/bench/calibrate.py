#!/usr/bin/python3
"""The simulator against the real cluster, on the same scenario and policy.

For every real-cluster record (RunRecord JSON, backend `cluster`) in DIR it
runs the simulator on the record's scenario file under the same policy and
prints both side by side with the difference (sim - cluster), and writes
the tables to DIR/calibration.md.  Besides the run's metrics it compares
what the tier did, read from both records' per-second series:

  dirty at burst start  mean over the bursts after the first of the dirty
                        fraction (of target_max_bytes) in the last sample
                        before each write phase starts: what a burst meets;
  peak fill             the highest fill fraction of the run;
  idle drain MiB/s      per idle phase, the fall of dirty from the phase's
                        start to its lowest point, over the seconds it took;
                        the mean over the idle phases where dirty fell.

usage: tools/bench/calibrate.py [--dir bench-results/cluster] [--scenario FILE]
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import scenario as scn  # noqa: E402
from record import RunRecord  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_SCENARIO = HERE / 'scenarios' / 'cluster' / 'bursty-write-fits.yaml'


@dataclass(frozen=True)
class Row:
    label: str
    cluster: Optional[float]
    sim: Optional[float]
    digits: int


def _before(t: Sequence[float], x: Sequence[Optional[float]], when: float) -> Optional[float]:
    """The last value sampled before `when` (the first if none): the
    simulator's sample at `when` is the state after that second's IO."""
    best: Optional[float] = None
    for ti, xi in zip(t, x, strict=True):
        if ti >= when:
            break
        if xi is not None:
            best = xi
    if best is None:
        best = next((xi for xi in x if xi is not None), None)
    return best


def tier_figures(rec: RunRecord, sc: scn.Scenario) -> Dict[str, Optional[float]]:
    t = [float(v) for v in rec.series['t']]
    dirty: List[Optional[float]] = list(rec.series['dirty'])
    fill = [f for f in rec.series['fill'] if f is not None]
    phases = sc.timeline()
    # Not the first: the run starts empty on both, but the simulator's
    # first sample is after its first step, the cluster's before any IO.
    at_burst = [_before(t, dirty, start) for start, ph in phases
                if ph.op in ('write', 'mixed') and start > 0]
    at_burst_known = [d for d in at_burst if d is not None]
    drains: List[float] = []
    for start, ph in phases:
        if ph.op != 'idle':
            continue
        end = start + ph.duration_s
        window = [(ti, d) for ti, d in zip(t, dirty, strict=True)
                  if start <= ti <= end and d is not None]
        if len(window) < 2:
            continue
        t0, d0 = window[0]
        t_low, d_low = min(window, key=lambda p: p[1])
        if d_low < d0 and t_low > t0:
            drains.append((d0 - d_low) * sc.target_max_bytes / MiB / (t_low - t0))
    return {
        'dirty_at_burst': (sum(at_burst_known) / len(at_burst_known)
                           if at_burst_known else None),
        'peak_fill': max(fill) if fill else None,
        'idle_drain_mib_s': sum(drains) / len(drains) if drains else None,
    }


def compare(cluster: RunRecord, sim: RunRecord, sc: scn.Scenario) -> List[Row]:
    cm, sm = cluster.metrics, sim.metrics
    ct, st = tier_figures(cluster, sc), tier_figures(sim, sc)

    def gib(v: Optional[float]) -> Optional[float]:
        return None if v is None else v / GiB

    return [
        Row('write p50 ms', cm['write_lat_ms_p50'], sm['write_lat_ms_p50'], 0),
        Row('write p99 ms', cm['write_lat_ms_p99'], sm['write_lat_ms_p99'], 0),
        Row('write max ms', cm['write_lat_ms_max'], sm['write_lat_ms_max'], 0),
        Row('blocked write s', cm['blocked_write_s'], sm['blocked_write_s'], 0),
        Row('throughput mean MiB/s', cm['throughput_mib_s_mean'],
            sm['throughput_mib_s_mean'], 2),
        Row('flushed GiB', gib(cm['flushed_bytes']), gib(sm['flushed_bytes']), 2),
        Row('promotes', cm['promotes'], sm['promotes'], 0),
        Row('ratio changes', cm['ratio_changes'], sm['ratio_changes'], 0),
        Row('dirty at burst start', ct['dirty_at_burst'], st['dirty_at_burst'], 3),
        Row('peak fill', ct['peak_fill'], st['peak_fill'], 3),
        Row('idle drain MiB/s', ct['idle_drain_mib_s'], st['idle_drain_mib_s'], 1),
    ]


def _fmt(v: Optional[float], digits: int) -> str:
    return '-' if v is None else f'{v:.{digits}f}'


def table(rows: Sequence[Row]) -> List[str]:
    head = ('figure', 'cluster', 'sim', 'sim - cluster')
    body = []
    for r in rows:
        diff = (None if r.cluster is None or r.sim is None else r.sim - r.cluster)
        body.append((r.label, _fmt(r.cluster, r.digits), _fmt(r.sim, r.digits),
                     _fmt(diff, r.digits) if diff is None or diff < 0
                     else '+' + _fmt(diff, r.digits)))
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(4)]
    rule = '  '.join('=' * w for w in widths)
    lines = [rule, '  '.join(h.ljust(w) for h, w in zip(head, widths, strict=True)), rule]
    lines += ['  '.join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return [*lines, rule]


def _shown(path: Path) -> str:
    """The scenario's path relative to the repository where it is inside
    it: the committed report should not name one checkout's directory."""
    try:
        return str(path.resolve().relative_to(HERE.parents[1]))
    except ValueError:
        return str(path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dir', type=Path, default=Path('bench-results/cluster'))
    ap.add_argument('--scenario', type=Path, default=DEFAULT_SCENARIO)
    a = ap.parse_args(argv)
    from simulator.run import simulate
    sc = scn.load(a.scenario)
    records = [RunRecord.read(p) for p in sorted(a.dir.glob('*.json'))]
    records = [r for r in records if r.backend == 'cluster' and r.scenario == sc.name]
    if not records:
        print(f'calibrate.py: no cluster record of {sc.name} in {a.dir}', file=sys.stderr)
        return 2
    out: List[str] = [f'# Simulator against the real cluster: {sc.name}', '',
                      f'Cluster records in `{a.dir}`; simulator runs of `{_shown(a.scenario)}` '
                      'under the same policy (tools/bench/calibrate.py).', '']
    for rec in records:
        sim = simulate(sc, policies.parse(rec.policy), log=lambda m: None)
        lines = [f'{sc.name}, policy {rec.policy}', '', *table(compare(rec, sim, sc)), '']
        print('\n'.join(lines))
        out += ['```', *lines, '```', '']
    (a.dir / 'calibration.md').write_text('\n'.join(out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
