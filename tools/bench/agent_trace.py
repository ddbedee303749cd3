#!/usr/bin/python3
"""What the OSD agent did in one repeat of a run, second by second, on the
cluster and on the simulator: client writes, flushes and evictions the
cache pool counted, its fill and dirty levels (fractions of the target),
and how many PGs were FULL, flushing HIGH and flushing LOW.

    agent_trace.py run --scenario FILE --policy P --out REC.json [--workdir DIR]
        one cluster run with the per-PG and pool traces kept (cluster_backend's
        pg_trace), then its table
    agent_trace.py cluster REC.json [--repeat N]
        the table of a cluster record made with the traces
    agent_trace.py sim --scenario FILE --policy P [--seed S] [--repeat N]
        the simulator's table for the same scenario and policy

    agent_trace.py osdlog OSD.LOG [OSD.LOG ...]
        per cache PG, from OSD logs at debug_osd 10 or more: flushes started,
        evictions of an object it had flushed (after the flush) and of a clean
        object met in the listing, and how often the agent's listing position
        passed the end of the hash space (set debug_osd with `ceph tell osd.N
        config set debug_osd 10` for the stretch to look at)

Rows start at the repeat's first write phase (t = 0; by default the second
repeat, the first an online policy has seen a repeat before).  The
cluster's pool counters come from `pg dump pools` once a second, and the
OSDs report PG stats every mgr_stats_period (cluster_backend sets it), so
a row can hold two reports or none; the sums over the phase are what to
compare.  The simulator counts client writes that land in the cache and,
as the OSD does, each eviction as a write of 0 kb; the cluster's
num_write counts every write op the cache pool served, so only flushes,
evictions and the levels compare directly.  Session 14 used it on
overflow-4m-fio-cluster (bench-results/cluster/overrun-rule.md).
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import scenario as scn  # noqa: E402

WINDOW_BEFORE_S = 3.0
WINDOW_AFTER_S = 5.0


class TraceError(ValueError):
    pass


@dataclass(frozen=True)
class Row:
    t: float                 # seconds from the phase's start (end of the interval)
    writes: float            # in the interval
    flushes: float
    evictions: float
    fill: float
    dirty: float
    full_pgs: float
    high_pgs: float
    low_pgs: float


WRITE_OPS = ('write', 'mixed')


def _first_write(phases: Sequence[Tuple[int, str]], repeat: int) -> int:
    """Index of the repeat's first write phase among (repeat, op) pairs."""
    for i, (rep, op) in enumerate(phases):
        if rep == repeat and op in WRITE_OPS:
            return i
    raise TraceError(f'no write phase in repeat {repeat + 1}')


def _cluster_first_write(rec: Dict[str, Any], repeat: int) -> Tuple[Dict[str, Any], int]:
    phases = rec['params']['phases']
    i = _first_write([(p['repeat'], p['op']) for p in phases], repeat)
    return phases[i], i


def cluster_phase_s(rec: Dict[str, Any], repeat: int) -> float:
    """The repeat's first write phase's scheduled length (to the next phase)."""
    p, i = _cluster_first_write(rec, repeat)
    phases = rec['params']['phases']
    if i + 1 < len(phases):
        return float(phases[i + 1]['scheduled_s'] - p['scheduled_s'])
    return float(p['end_s'] - p['start_s'])


def cluster_rows(rec: Dict[str, Any], repeat: int) -> List[Row]:
    tr = rec['params'].get('pg_trace')
    if not tr or 'pool_samples' not in tr:
        raise TraceError('the record has no pool trace (make it with `agent_trace.py run`)')
    pf, f = tr['pool_fields'], tr['fields']
    i_objects, i_dirty = pf.index('num_objects'), pf.index('num_objects_dirty')
    i_modes = [f.index(k) for k in ('num_evict_mode_full', 'num_flush_mode_high',
                                    'num_flush_mode_low')]
    budget = float(tr['budget_objects'])
    t0 = float(_cluster_first_write(rec, repeat)[0]['start_s'])
    pgs_at = {round(t, 2): pgs for t, pgs in tr['samples']}
    rows: List[Row] = []
    prev: Optional[List[Any]] = None
    for t, v in tr['pool_samples']:
        if prev is not None:
            d = {k: v[i] - prev[1][i] for i, k in enumerate(pf)}
            pgs = pgs_at.get(round(t, 2), {})
            n = max(len(pgs), 1)
            full, high, low = (float(sum(1 for x in pgs.values() if x[i])) for i in i_modes)
            rows.append(Row(t - t0, d['num_write'], d['num_flush'], d['num_evict'],
                            v[i_objects] / (budget * n), v[i_dirty] / (budget * n),
                            full, high, low))
        prev = [t, v]
    return rows


def sim_rows(sc: scn.Scenario, policy: str, seed: int, repeat: int) -> List[Row]:
    from simulator.run import simulate
    from simulator.tier import EVICT_FULL, FLUSH_HIGH, FLUSH_LOW, TierSim
    n = len(sc.phases)
    timeline = sc.timeline()
    t0 = timeline[_first_write([(k // n, p.op) for k, (_, p) in enumerate(timeline)],
                               repeat)][0]
    rows: List[Row] = []
    last = [(0.0, 0.0, 0.0)]          # the counters start at 0

    def observe(t: float, sim: TierSim) -> None:
        c = sim.totals.cache
        now = (c['num_write'], c['num_flush'], c['num_evict'])
        writes, flushes, evictions = (a - b for a, b in zip(now, last[0], strict=True))
        clean, dirty = sim.objects()
        m = sim.m
        per_pg = sim.budget / sim.avg * float(m.sum())
        rows.append(Row(t - t0, writes, flushes, evictions,
                        float((m * (clean + dirty)).sum()) / per_pg,
                        float((m * dirty).sum()) / per_pg,
                        float(m[sim.evict_mode == EVICT_FULL].sum()),
                        float(m[sim.flush_mode == FLUSH_HIGH].sum()),
                        float(m[sim.flush_mode == FLUSH_LOW].sum())))
        last[0] = now
    simulate(sc, policies.parse(policy), seed=seed, observe=observe)
    return rows


def table(rows: Sequence[Row], phase_s: float) -> str:
    out = ['     t  writes  flushes  evicts  fill  dirty  FULL  HIGH  LOW']
    shown = [r for r in rows if -WINDOW_BEFORE_S <= r.t <= phase_s + WINDOW_AFTER_S]
    for r in shown:
        out.append(f'{r.t:6.1f}  {r.writes:6.0f}  {r.flushes:7.0f}  {r.evictions:6.0f}  '
                   f'{r.fill:4.2f}  {r.dirty:5.2f}  {r.full_pgs:4.0f}  {r.high_pgs:4.0f}  '
                   f'{r.low_pgs:3.0f}')
    inside = [r for r in rows if 0.0 < r.t <= phase_s]
    fl = sum(r.flushes for r in inside)
    ev = sum(r.evictions for r in inside)
    out.append(f'over the phase ({phase_s:g} s): writes {sum(r.writes for r in inside):.0f}, '
               f'flushes {fl:.0f}, evictions {ev:.0f} ({ev / fl if fl else float("nan"):.2f} '
               f'per flush), FULL PG-seconds {sum(r.full_pgs for r in inside):.0f}')
    return '\n'.join(out)


_PG = re.compile(r'pg\[(\d+\.[0-9a-f]+)\(')
_OBJECT = re.compile(r'(\d+:[0-9a-f]{8}:::\S+?:head)')
_EVENTS = (('agent_work max', 'pos'), ('agent_maybe_flush flushing', 'flush'),
           ('agent_maybe_evict evicting', 'evict'))


@dataclass
class PgAgentLog:
    flushes: int = 0
    evicted_after_flush: int = 0     # an object this log saw the agent flush
    evicted_clean_met: int = 0       # a clean object met in the listing
    wraps: int = 0                   # the listing position passed the end


def osd_log_counts(lines: Iterable[str]) -> Dict[str, PgAgentLog]:
    """What PrimaryLogPG::agent_work's debug lines say it did, per PG.  The
    position it lists from (`pos`) is kept between calls; when its hash
    goes down, the listing passed the end of the hash space (or a fresh
    pass began at the start, `pos MIN`)."""
    out: Dict[str, PgAgentLog] = {}
    flushed: Dict[str, Set[str]] = {}
    last_pos: Dict[str, str] = {}
    for line in lines:
        kind = next((k for marker, k in _EVENTS if marker in line), None)
        pg = _PG.search(line) if kind else None
        if kind is None or pg is None:
            continue
        name = pg.group(1)
        rec = out.setdefault(name, PgAgentLog())
        tail = line.split('pos ', 1)[1] if kind == 'pos' else line.split('] ', 1)[-1]
        m = _OBJECT.search(tail)
        obj = m.group(1) if m else ''
        if kind == 'pos':
            h = obj.split(':')[1] if obj else '00000000'
            if name in last_pos and h < last_pos[name]:
                rec.wraps += 1
            last_pos[name] = h
        elif kind == 'flush':
            rec.flushes += 1
            flushed.setdefault(name, set()).add(obj)
        elif obj in flushed.get(name, set()):
            rec.evicted_after_flush += 1
        else:
            rec.evicted_clean_met += 1
    return out


def osd_log_table(counts: Dict[str, PgAgentLog]) -> str:
    total = PgAgentLog(*(sum(getattr(c, f.name) for c in counts.values())
                         for f in fields(PgAgentLog)))
    out = ['pg      flushes  evicted after flush  evicted clean, met  position wraps']
    for pg, c in [*sorted(counts.items()), ('all', total)]:
        out.append(f'{pg:6s}  {c.flushes:7d}  {c.evicted_after_flush:19d}  '
                   f'{c.evicted_clean_met:18d}  {c.wraps:14d}')
    return '\n'.join(out)


def _phase_s(sc: scn.Scenario) -> float:
    return next(p.duration_s for p in sc.phases if p.op in WRITE_OPS)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='agent_trace.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('run')
    r.add_argument('--scenario', required=True, type=Path)
    r.add_argument('--policy', required=True)
    r.add_argument('--out', required=True, type=Path)
    r.add_argument('--workdir', type=Path, default=Path('/tmp/tiertune-agent-trace'))
    c = sub.add_parser('cluster')
    c.add_argument('record', type=Path)
    o = sub.add_parser('osdlog')
    o.add_argument('logs', type=Path, nargs='+')
    s = sub.add_parser('sim')
    s.add_argument('--scenario', required=True, type=Path)
    s.add_argument('--policy', required=True)
    s.add_argument('--seed', type=int, default=0)
    for p in (r, c, s):
        p.add_argument('--repeat', type=int, default=2, help='which repeat (1-based)')
    a = ap.parse_args(argv)
    try:
        if a.cmd == 'osdlog':
            counts: Dict[str, PgAgentLog] = {}
            for log in a.logs:
                with log.open(errors='replace') as fh:
                    counts.update(osd_log_counts(fh))
            print(osd_log_table(counts))
            return 0
        if a.cmd == 'sim':
            sc = scn.load(a.scenario)
            print(table(sim_rows(sc, a.policy, a.seed, a.repeat - 1), _phase_s(sc)))
            return 0
        if a.cmd == 'run':
            import cluster_backend
            rec = cluster_backend.run(scn.load(a.scenario), a.policy, a.workdir, pg_trace=True)
            rec.write(a.out)
            d = rec.as_dict()
        else:
            d = json.loads(a.record.read_text())
        print(table(cluster_rows(d, a.repeat - 1), cluster_phase_s(d, a.repeat - 1)))
    except (scn.ScenarioError, policies.PolicyError, TraceError) as e:
        print(f'agent_trace.py: {e}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
