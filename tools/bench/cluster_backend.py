"""Run one scenario under one policy on a real local Ceph cluster: a RunRecord.

    run(scenario, policy, workdir, log=print, time_scale=1.0,
        cluster_overrides=None) -> RunRecord

Each run starts its own cluster (tools/localcluster: memstore cache OSDs, a
base tier of BlueStore OSDs on throttled loop devices, the writeback tier
`cache` over `base`) in a fresh directory under workdir, sized from the
scenario, and always stops it (only the PIDs the harness started).  The
phases run with fio (rbd ioengine, on an image in the base pool: the overlay
sends its IO through the cache) or rados bench (see fio_jobs.py); a sampler
reads the pools' PG stats and the OSD map once a second.

Command line:
  /usr/bin/python3 tools/bench/cluster_backend.py --scenario FILE --policy P
      --out OUT.json [--workdir DIR] [--time-scale X] [--cluster KEY=VALUE ...]
"""

import argparse
import json
import math
import shlex
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fio_jobs  # noqa: E402
import policies  # noqa: E402
import rados  # noqa: E402
import scenario as scn  # noqa: E402
from record import (  # noqa: E402
    METRIC_KEYS,
    OPTIONAL_METRIC_KEYS,
    SERIES_KEYS,
    RunRecord,
    throughput_stats,
)

from localcluster import ClusterError, ClusterSpec, GiB, LocalCluster, MiB  # noqa: E402

IMAGE = 'bench'
SAMPLE_INTERVAL_S = 1.0
# OSDs report PG stats to the mgr every mgr_stats_period (5 s by default):
# once a second here, so the 1 s samples see fresh stats.  The same for both
# policies; tiertune (which ticks every TIERTUNE_SLEEP_INTERVAL_S) sees them too.
MGR_STATS_PERIOD_S = 1
# fio connects to the cluster and opens the image before its runtime starts.
FIO_STARTUP_S = 0.5
# After the last phase: wait this long so the stats of its last ops arrive.
SETTLE_S = 3.0
# A workload tool that outlives its runtime by this much is killed.
TOOL_GRACE_S = 600.0
SERIES_ROWS = 1500
# The cache pool's hit sets are a time constant of the scenario: scaled with it.
MIN_HIT_SET_PERIOD_S = 10


class ClusterBenchError(RuntimeError):
    pass


# ----- sizing ----------------------------------------------------------------

def key_span(sc: scn.Scenario) -> int:
    """Bytes of the image: the largest key range of any phase."""
    return max((p.keys.count for p in sc.phases if p.keys is not None), default=1) \
        * sc.object_size


def cluster_spec(sc: scn.Scenario, ratios: Tuple[float, float, float], time_scale: float,
                 overrides: Optional[Dict[str, str]] = None) -> ClusterSpec:
    base = ClusterSpec()
    # Each memstore OSD holds its share of the cache; FULL blocks writes only
    # once a PG is over its share of target_max_bytes, and hit-set archives
    # and objects in flight come on top: twice the share, plus 1 GiB.
    memstore = max(base.memstore_bytes,
                   math.ceil(2 * sc.target_max_bytes / base.fast_osds) + GiB)
    # The base takes at most its write bandwidth for the whole run, and at
    # most the keys' bytes (sparse files: only what is written is stored).
    run_s = sc.duration_s * time_scale
    per_osd = min(base.slow_write_bps * run_s * 1.2,
                  2 * key_span(sc) / base.slow_osds)
    slow_disk = max(base.slow_disk_bytes, int(per_osd) + 2 * GiB)
    tier = sc.tier
    spec = ClusterSpec(
        memstore_bytes=int(memstore), slow_disk_bytes=slow_disk,
        target_max_bytes=sc.target_max_bytes, cache_pg_num=sc.pg_num,
        dirty_ratio=ratios[0], dirty_high_ratio=ratios[1], full_ratio=ratios[2],
        # No hit sets (count 0) is a period of 0 too, as the scenario means
        # it: Ceph then promotes every miss at once and writes land dirty.
        hit_set_count=int(tier.hit_set_count),
        hit_set_period=(0 if tier.hit_set_count == 0 else
                        max(MIN_HIT_SET_PERIOD_S, round(tier.hit_set_period_s * time_scale))),
        min_read_recency_for_promote=int(tier.min_read_recency),
        min_write_recency_for_promote=int(tier.min_write_recency),
        promote_max_bytes_sec=int(tier.promote_max_mib_s_per_osd * MiB),
        promote_max_objects_sec=int(tier.promote_max_objects_s_per_osd))
    return spec.with_overrides(overrides or {})


# ----- sampling ----------------------------------------------------------------

@dataclass
class Sample:
    t: float                       # seconds since the run's start
    cache: Dict[str, int]          # stat_sum of the cache pool (mgr PG stats)
    base: Dict[str, int]           # stat_sum of the base pool
    pools: List[Dict[str, Any]]    # OSD map entries of both pools
    pgs: Optional[Dict[str, List[int]]] = None   # per cache PG: PG_TRACE_FIELDS


# What a per-PG trace keeps of each cache PG's stat_sum (Sampler pg_trace).
PG_TRACE_FIELDS = ('num_evict_mode_full', 'num_evict_mode_some', 'num_flush_mode_high',
                   'num_flush_mode_low', 'num_objects', 'num_objects_dirty')
# ... and of the cache pool's, once a second beside it: what the agent did
# (flushes, evictions) and the client writes, which the PGs' object counts
# alone cannot tell apart.
POOL_TRACE_FIELDS = ('num_write', 'num_flush', 'num_evict', 'num_promote', 'num_objects',
                     'num_objects_dirty')


def ls_by_pool_stats(out: Any) -> List[Dict[str, Any]]:
    """The PGs of `pg ls-by-pool`'s JSON: a bare list in some releases,
    {'pg_stats': [...]} in others."""
    return list(out['pg_stats'] if isinstance(out, dict) else out)


def _json_cmd(r: 'rados.Rados', kind: str, cmd: Dict[str, Any], timeout: int = 10) -> Any:
    call = r.mgr_command if kind == 'mgr' else r.mon_command
    rc, out, err = call(json.dumps(cmd), b'', timeout=timeout)
    if rc != 0:
        raise ClusterBenchError(f'{cmd["prefix"]}: rc={rc} {err}')
    return json.loads(out)


class Sampler:
    """Once a second: `pg dump pools` (the mgr's per-pool stat_sum) and
    `osd dump` (the pools' ratios), through one librados client; with
    pg_trace, also `pg ls-by-pool` of the cache pool (each PG's agent modes
    and object counts, PG_TRACE_FIELDS)."""

    def __init__(self, conf: Path, cache_pool: str, base_pool: str,
                 pg_trace: bool = False) -> None:
        self.conf = conf
        self.names = (cache_pool, base_pool)
        self.pg_trace = pg_trace
        self.samples: List[Sample] = []
        self.errors: List[str] = []
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name='sampler', daemon=True)
        self._r = rados.Rados(conffile=str(conf))
        self._r.connect(timeout=30)

    def start(self, t0: float) -> None:
        self.t0 = t0
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._r.shutdown()

    def take(self) -> Sample:
        t = time.monotonic() - self.t0
        osd_map = _json_cmd(self._r, 'mon', {'prefix': 'osd dump', 'format': 'json'})
        pools = {p['pool_name']: p for p in osd_map['pools']}
        ids = [int(pools[n]['pool']) for n in self.names]
        dump = _json_cmd(self._r, 'mgr', {'prefix': 'pg dump', 'dumpcontents': ['pools'],
                                          'format': 'json'})
        sums = {int(p['poolid']): p['stat_sum'] for p in dump['pool_stats']}
        pgs = None
        if self.pg_trace:
            ls = _json_cmd(self._r, 'mgr', {'prefix': 'pg ls-by-pool', 'poolstr': self.names[0],
                                            'format': 'json'})
            pgs = {p['pgid']: [int(p['stat_sum'].get(k, 0)) for k in PG_TRACE_FIELDS]
                   for p in ls_by_pool_stats(ls)}
        return Sample(t=t, cache=sums[ids[0]], base=sums[ids[1]],
                      pools=[pools[n] for n in self.names], pgs=pgs)

    def _loop(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            try:
                self.samples.append(self.take())
            except Exception as e:      # a slow mon or mgr: note it, keep sampling
                self.errors.append(f'{time.monotonic() - self.t0:.1f}s: {e}')
            due += SAMPLE_INTERVAL_S
            self._stop.wait(max(0.0, due - time.monotonic()))


TIER_PERF_KEYS = ('tier_proxy_read', 'tier_proxy_write', 'tier_promote', 'tier_flush',
                  'tier_try_flush', 'tier_evict', 'op_cache_hit')
PERF_DUMP_TIMEOUT_S = 30


def cache_osds(c: LocalCluster) -> List[int]:
    """The OSDs of the cache's device class (the memstore ones)."""
    return [int(o) for o in c.ceph_json('osd', 'crush', 'class', 'ls-osd', 'ssd')]


def osd_perf(c: LocalCluster, osds: List[int],
             keys: Tuple[str, ...] = TIER_PERF_KEYS) -> Dict[str, int]:
    """Tier counters of the cache OSDs, summed: `ceph tell osd.N perf dump`
    (their priority keeps them out of the mgr's reports).  A subprocess, so a
    tell that never answers is a ClusterError after PERF_DUMP_TIMEOUT_S, not
    a blocked librados call no Python timeout can interrupt."""
    tot = dict.fromkeys(keys, 0)
    for osd in osds:
        counters = c.ceph_json('tell', f'osd.{osd}', 'perf', 'dump', 'osd',
                               timeout=PERF_DUMP_TIMEOUT_S)['osd']
        for k in keys:
            tot[k] += int(counters.get(k, 0))
    return tot


# ----- running the phases -------------------------------------------------------

@dataclass
class PhaseRun:
    name: str
    op: str
    repeat: int                    # 0 for the first repeat
    tool: str                      # fio | rados bench | sleep
    scheduled_s: float             # start, seconds from the run's start
    start_s: float = 0.0           # actual start
    end_s: float = 0.0             # actual end (tool exited)
    io_start_s: Optional[float] = None   # first op issued
    io_last_issue_s: Optional[float] = None
    io_end_s: Optional[float] = None     # last op completed
    argv: str = ''
    summary: Dict[str, Any] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        return self.op in ('write', 'mixed')

    def as_dict(self) -> Dict[str, Any]:
        d = {k: getattr(self, k) for k in ('name', 'op', 'repeat', 'tool', 'argv', 'summary')}
        for k in ('scheduled_s', 'start_s', 'end_s', 'io_start_s', 'io_last_issue_s',
                  'io_end_s'):
            v = getattr(self, k)
            d[k] = None if v is None else round(v, 3)
        return d


def _run_phases(c: LocalCluster, sc: scn.Scenario, time_scale: float, iodir: Path,
                t0: float, wall0: float, log: Callable[[str], None]
                ) -> Tuple[List[PhaseRun], fio_jobs.Ops, List[float]]:
    image = fio_jobs.Image(pool=c.spec.base_pool, name=IMAGE, object_size=sc.object_size)
    runs: List[PhaseRun] = []
    parts: List[fio_jobs.Ops] = []
    bench_max_lat: List[float] = []
    start = 0.0
    for rep in range(sc.repeat):
        for i, ph in enumerate(sc.phases):
            dur = ph.duration_s * time_scale
            tool = 'sleep' if ph.op == 'idle' else (
                'rados bench' if fio_jobs.uses_rados_bench(ph, sc.object_size) else 'fio')
            pr = PhaseRun(name=ph.name, op=ph.op, repeat=rep, tool=tool, scheduled_s=start)
            start += dur
            end_at = t0 + start
            now = time.monotonic()
            if now < end_at - dur:
                time.sleep(end_at - dur - now)
            pr.start_s = time.monotonic() - t0
            log(f'{sc.name} t={pr.start_s:6.1f}s repeat {rep + 1}/{sc.repeat} phase {ph.name} '
                f'({tool}, {dur:.0f}s)')
            runtime = end_at - time.monotonic()
            if tool == 'sleep':
                time.sleep(max(runtime, 0.0))
            else:
                ops = _run_tool(c, ph, i, (rep, sc.repeat), tool, image, runtime, iodir, pr,
                                bench_max_lat)
                parts.append(ops)
                if ops.t.size:
                    issued = ops.t - np.nan_to_num(ops.lat_s, nan=1.0)
                    pr.io_start_s = float(issued.min() - wall0)
                    pr.io_last_issue_s = float(issued.max() - wall0)
                    pr.io_end_s = float(ops.t.max() - wall0)
            pr.end_s = time.monotonic() - t0
            runs.append(pr)
    return runs, fio_jobs.Ops.concat(parts), bench_max_lat


def _run_tool(c: LocalCluster, ph: scn.Phase, index: int, reps: Tuple[int, int], tool: str,
              image: fio_jobs.Image, runtime: float, iodir: Path, pr: PhaseRun,
              bench_max_lat: List[float]) -> fio_jobs.Ops:
    rep, repeats = reps
    tag = f'r{rep + 1:02d}-p{index + 1:02d}-{ph.name}'
    if tool == 'rados bench':
        argv = fio_jobs.rados_bench_argv(ph, c.spec.base_pool, runtime, tag)
    else:
        argv = fio_jobs.fio_argv(ph, image, runtime - FIO_STARTUP_S,
                                 fio_jobs.seed(ph, index, rep), iodir / tag,
                                 keys=fio_jobs.key_slice(ph, rep, repeats))
    pr.argv = shlex.join(argv)
    p = fio_jobs.run_logged(argv, c.env, iodir / f'{tag}.out', runtime + TOOL_GRACE_S)
    if p.returncode != 0:
        raise ClusterBenchError(f'phase {ph.name} (repeat {rep + 1}): {argv[0]} exited '
                                f'{p.returncode}: {p.stdout.strip()[-800:]}')
    if tool == 'rados bench':
        rb = fio_jobs.read_rados_bench(p.stdout, ph.block_size)
        pr.summary = {'total_writes': rb.total_writes, 'avg_lat_s': rb.avg_lat_s,
                      'max_lat_s': rb.max_lat_s}
        if rb.max_lat_s is not None:
            bench_max_lat.append(rb.max_lat_s)
        return rb.ops
    pr.summary = fio_jobs.fio_summary(iodir / tag)
    if pr.summary.get('error'):
        raise ClusterBenchError(f'phase {ph.name} (repeat {rep + 1}): fio error '
                                f'{pr.summary["error"]}')
    ops = fio_jobs.read_fio(iodir / tag)
    for log_file in iodir.glob(f'{tag}_*.log'):
        log_file.unlink()          # per-op logs are large; the JSON summary stays
    return ops


# ----- from samples and ops to the record -------------------------------------------

def _delta(first: Dict[str, int], last: Dict[str, int], key: str) -> int:
    return int(last.get(key, 0)) - int(first.get(key, 0))


def _ratios(pool: Dict[str, Any]) -> Tuple[float, float, float]:
    d, h, f = (round(int(pool[f'cache_target_{k}_ratio_micro']) / 1e6, 6)
               for k in ('dirty', 'dirty_high', 'full'))
    return d, h, f


def _rows_of(t: np.ndarray, n: int) -> np.ndarray:
    return np.clip(np.floor(t).astype(int), 0, max(n - 1, 0))


def _aggregate(cols: Dict[str, np.ndarray], n: int) -> Dict[str, List[Optional[float]]]:
    k = max(1, math.ceil(n / SERIES_ROWS))
    rows = math.ceil(n / k)
    out: Dict[str, List[Optional[float]]] = {'t': [float(i * k) for i in range(rows)]}
    for name, x in cols.items():
        pad = np.full(rows * k, np.nan)
        pad[:n] = x
        m = pad.reshape(rows, k)
        with np.errstate(all='ignore'), warnings.catch_warnings():
            # an all-NaN row (no write in it) warns; it is None in the record
            warnings.simplefilter('ignore', RuntimeWarning)
            agg = np.nanmax(m, axis=1) if name == 'write_lat_ms_p99' else np.nanmean(m, axis=1)
        out[name] = [None if not np.isfinite(v) else float(v) for v in agg]
    return {key: out[key] for key in SERIES_KEYS}


def _pct(lat_s: np.ndarray, q: float) -> Optional[float]:
    """The q-quantile in ms: the smallest latency with at least q of the ops
    at or below it (record.weighted_percentile with every op weighing 1)."""
    if lat_s.size == 0:
        return None
    return float(np.percentile(lat_s, 100.0 * q, method='inverted_cdf')) * 1000.0


def after_first_repeat(runs: List[PhaseRun], t: np.ndarray) -> np.ndarray:
    """Which of the ops completed at t (seconds from the run's start) came
    after the scenario's first repeat: from the actual start of the second
    repeat's first phase on (none with one repeat)."""
    later_from = min((r.start_s for r in runs if r.repeat >= 1), default=None)
    if later_from is None:
        return np.zeros(t.shape, dtype=bool)
    return t >= later_from


def build_record(sc: scn.Scenario, policy: str, runs: List[PhaseRun], ops: fio_jobs.Ops,
                 bench_max_lat: List[float], samples: List[Sample], wall0: float,
                 tt_history: Optional[List[Dict[str, Any]]], perf: Dict[str, int],
                 params: Dict[str, Any]) -> RunRecord:
    tt = policies.tiertune_package()
    run_s = max(r.end_s for r in runs)
    n = max(1, math.ceil(run_s))
    t_ops = ops.t - wall0
    rows = _rows_of(t_ops, n)
    tput = np.bincount(rows, weights=ops.nbytes, minlength=n)[:n] / MiB
    writes = ops.write & np.isfinite(ops.lat_s)
    reads = ~ops.write & np.isfinite(ops.lat_s)
    wp99 = np.full(n, np.nan)
    if writes.any():
        wr, wl = rows[writes], ops.lat_s[writes]
        order = np.argsort(wr, kind='stable')
        wr, wl = wr[order], wl[order]
        cuts = np.flatnonzero(np.diff(wr)) + 1
        for in_row, chunk in zip(np.split(wr, cuts), np.split(wl, cuts), strict=True):
            wp99[in_row[0]] = _pct(chunk, 0.99)

    # Rows with client IO offered: whole seconds between a phase's first and
    # last issue (min and stddev of throughput; not the tail where the tool
    # only waits for its last ops); rows where writes were offered: any
    # overlap with a writing phase's run.
    active = np.zeros(n, dtype=bool)
    offered = np.zeros(n, dtype=bool)
    for r in runs:
        if r.io_start_s is None or r.io_last_issue_s is None:
            continue
        active[max(0, math.ceil(r.io_start_s)):max(0, math.floor(r.io_last_issue_s))] = True
        if r.writes:
            offered[max(0, math.floor(r.start_s)):min(n, math.ceil(r.end_s))] = True

    tiers = [tt['topology'].cache_tiers({'pools': s.pools}) for s in samples]
    (first_tier,) = tiers[0].values()
    has_hit_set = first_tier.hit_set.active
    dirty = np.full(n, np.nan)
    fill = np.full(n, np.nan)
    full_pgs = np.zeros(n, dtype=int)
    observed: List[Dict[str, float]] = []
    last: Optional[Tuple[float, float, float]] = None
    for s, tiers_s in zip(samples, tiers, strict=True):
        (tier,) = tiers_s.values()
        lv = tt['sampling'].agent_levels(tier, tt['sampling'].PoolCounters.from_stat_sum(s.cache))
        row = min(max(int(s.t), 0), n - 1)
        if s.t <= run_s + 1:
            dirty[row], fill[row] = lv.dirty, lv.fill
            full_pgs[row] = max(full_pgs[row], int(s.cache.get('num_evict_mode_full', 0)))
        r3 = _ratios(s.pools[0])
        if r3 != last:
            observed.append({'t': round(max(s.t, 0.0), 1), 'dirty': r3[0],
                             'dirty_high': r3[1], 'full': r3[2]})
            last = r3
    for x in (dirty, fill):          # a row the sampler missed keeps the level before it
        for i in range(1, n):
            if np.isnan(x[i]):
                x[i] = x[i - 1]
    blocked_rows = (full_pgs > 0) & offered

    first, final = samples[0], samples[-1]
    client_ops = float(ops.ops.sum())
    # Misses: ops proxied to the base, and ops that waited for a promotion.
    # With hit sets every miss is proxied (the promotion, if any, follows in
    # the background); without, every miss promotes first (nothing proxied
    # unless a PG is FULL).
    proxied = perf.get('tier_proxy_read', 0) + perf.get('tier_proxy_write', 0)
    promoted = _delta(first.cache, final.cache, 'num_promote')
    misses = proxied + (promoted if not has_hit_set else 0)
    hit_ratio = max(0.0, 1.0 - misses / client_ops) if client_ops > 0 else None
    if policy == 'no-tier' and client_ops > 0:
        # No overlay: nothing is proxied, and any op the cache pool served
        # is one that reached it (none should).
        served = (_delta(first.cache, final.cache, 'num_read')
                  + _delta(first.cache, final.cache, 'num_write'))
        hit_ratio = min(1.0, served / client_ops)
    if tt_history is not None:
        applied = [h for h in tt_history
                   if h['result'] == 'applied' and wall0 <= h['time'] <= wall0 + run_s]
        changes = observed[:1] + [{'t': round(h['time'] - wall0, 1), **h['new']}
                                  for h in applied]
        n_changes = len(applied)
    else:
        changes = observed[:1] + observed[1:]
        n_changes = len(observed) - 1
    wl = ops.lat_s[writes]
    wl_later = ops.lat_s[writes & after_first_repeat(runs, t_ops)]
    wmax = [float(wl.max())] if wl.size else []
    wmax += bench_max_lat
    metrics: Dict[str, Any] = {
        **throughput_stats(tput, active, float(ops.nbytes.sum()) / MiB, run_s),
        'write_lat_ms_p50': _pct(wl, 0.5), 'write_lat_ms_p99': _pct(wl, 0.99),
        'write_lat_ms_p999': _pct(wl, 0.999),
        'write_lat_ms_max': max(wmax) * 1000.0 if wmax else None,
        'read_lat_ms_p99': _pct(ops.lat_s[reads], 0.99),
        'write_lat_ms_p99_after_first': _pct(wl_later, 0.99),
        'blocked_write_s': float(blocked_rows.sum()) * 1.0,
        'flushed_bytes': _delta(first.cache, final.cache, 'num_flush_kb') * 1024,
        'promotes': _delta(first.cache, final.cache, 'num_promote'),
        'hit_ratio': hit_ratio,
        'ratio_changes': n_changes,
    }
    assert set(metrics) == set(METRIC_KEYS) | set(OPTIONAL_METRIC_KEYS)
    counters = ('num_read', 'num_read_kb', 'num_write', 'num_write_kb', 'num_flush',
                'num_flush_kb', 'num_evict', 'num_evict_kb', 'num_promote')
    params.update({
        'run_s': round(run_s, 2),
        'phases': [r.as_dict() for r in runs],
        'client_ops': client_ops,
        'cache_pool_has_hit_set': has_hit_set,
        'misses': misses,
        'client_ops_by_kind': {'read': float(ops.ops[~ops.write].sum()),
                               'write': float(ops.ops[ops.write].sum())},
        'cache_osd_perf_delta': perf,
        'pool_counters_delta': {
            'cache': {k: _delta(first.cache, final.cache, k) for k in counters},
            'base': {k: _delta(first.base, final.base, k) for k in counters}},
        'max_full_pgs': int(full_pgs.max()) if n else 0,
        'observed_ratio_changes': observed,
        'tiertune_history': tt_history,
    })
    series = _aggregate({'throughput_mib_s': tput, 'write_lat_ms_p99': wp99,
                         'dirty': dirty, 'fill': fill}, n)
    return RunRecord(scenario=sc.name, policy=policy, backend='cluster', metrics=metrics,
                     series=series, ratio_changes=changes, how=HOW, params=params)


HOW = (
    'real local cluster (tools/localcluster: memstore cache OSDs, BlueStore base OSDs on '
    'blkio-throttled loop devices, writeback tier cache over base), one fresh cluster per '
    'run.  Phases: fio with the rbd ioengine on an image in the base pool (the overlay '
    'sends its IO through the cache), one job with iodepth = threads; sequential '
    'whole-object writes at full speed with rados bench unless the phase names fio '
    '(see params.phases for each command line); idle phases sleep; phase durations and '
    'the hit-set period are multiplied by time_scale.  throughput = bytes of client ops '
    'completed per second (fio per-op logs by completion time; rados bench per-second '
    'completions), mean over the whole run, min and stddev over the whole seconds '
    'between a phase\'s first and last issue.  Latencies = fio per-op total latency '
    '(submit + complete, log_avg_msec=0) over every op of the run; rados bench reports '
    'no per-op latencies, only its max, which is counted in write_lat_ms_max.  '
    'dirty and fill = the cache '
    'pool\'s stat_sum (ceph pg dump pools, sampled every second; OSDs report every '
    f'{MGR_STATS_PERIOD_S} s) through tiertune\'s agent_levels (hit-set archives out, '
    '300 B/object store overhead in, against target_max_bytes).  blocked_write_s = '
    'seconds in which a sample showed some cache PG in evict mode FULL '
    '(num_evict_mode_full > 0) while a phase with writes was running.  flushed_bytes and '
    'promotes = the change of the cache pool\'s num_flush_kb and num_promote over the '
    'run.  hit_ratio = 1 - misses / client ops (fio ops + rados bench writes), misses = '
    'ops the cache OSDs proxied to the base (tier_proxy_read + tier_proxy_write perf '
    'counters), plus, on a cache pool without hit sets (where every miss waits for its '
    'promotion), the promotions (num_promote); with hit sets a promotion follows a proxied '
    'op in the background and is not counted again.  ratio_changes = '
    'tiertune history entries applied during the run (tiertune) or ratio changes seen in '
    'the OSD map (static, polled every second).  no-tier: the overlay is removed before '
    'the phases, so the clients\' IO goes to the base pool directly; hit_ratio = ops the '
    'cache pool served / client ops.')


# ----- the run ---------------------------------------------------------------------

def _setup_policy(c: LocalCluster, kind: str) -> Dict[str, Any]:
    pool = c.spec.cache_pool
    if kind == 'no-tier':
        # The clients' IO goes straight to the base pool; the cache pool
        # stays a tier of it, with nothing sent through it.
        c.ceph('tiertune', 'mode', pool, 'off')
        c.ceph('osd', 'tier', 'remove-overlay', c.spec.base_pool)
        return {'mode': 'off', 'overlay': 'removed'}
    if kind != 'tiertune':
        c.ceph('tiertune', 'mode', pool, 'off')
        return {'mode': 'off'}
    c.ceph('config', 'set', 'mgr', 'mgr/tiertune/sleep_interval',
           f'{policies.TIERTUNE_SLEEP_INTERVAL_S:g}')
    for key, value in policies.TIERTUNE_SETTINGS.items():
        c.ceph('tiertune', 'set', pool, key, f'{value:g}')
    return {'mode': 'on', 'sleep_interval_s': policies.TIERTUNE_SLEEP_INTERVAL_S,
            'settings': dict(policies.TIERTUNE_SETTINGS)}


# `rbd create` on a fresh cluster once hung past 120 s with every PG
# active+clean and no slow request in the OSD logs (exceeds-4m-fio, session
# 17; one run in about forty): its client op was not answered.  A new client
# gets it done, so the harness waits this long and tries again.
IMAGE_CREATE_TIMEOUT_S = 60
IMAGE_CREATE_ATTEMPTS = 3


def _create_image(c: LocalCluster, pool: str, size: int, object_size: int,
                  log: Callable[[str], None]) -> int:
    """Create the bench image; the attempts it took.  A timed-out attempt
    may still have created the image, so each retry first asks; a question
    that times out too fails that attempt, not the run."""
    for attempt in range(1, IMAGE_CREATE_ATTEMPTS + 1):
        try:
            if attempt > 1 and c.run(['rbd', 'info', f'{pool}/{IMAGE}'], check=False,
                                     timeout=IMAGE_CREATE_TIMEOUT_S).returncode == 0:
                return attempt - 1
            c.run(['rbd', 'create', f'{pool}/{IMAGE}', '--size', f'{size}B',
                   '--object-size', str(object_size), '--image-feature', 'layering'],
                  timeout=IMAGE_CREATE_TIMEOUT_S)
            return attempt
        except ClusterError as e:
            if attempt == IMAGE_CREATE_ATTEMPTS:
                raise
            log(f'rbd create, attempt {attempt}: {e}; trying again')
    raise AssertionError('unreachable')


def run(scenario: scn.Scenario, policy: str, workdir: Path,
        log: Callable[[str], None] = print, time_scale: float = 1.0,
        cluster_overrides: Optional[Dict[str, str]] = None,
        pg_trace: bool = False) -> RunRecord:
    """One scenario under policy ('static:D,H,F' or 'tiertune') on a fresh
    local cluster in a new directory under workdir.  cluster_overrides:
    ClusterSpec fields as KEY=VALUE strings, applied last (recorded).
    pg_trace: keep each cache PG's agent modes and object counts once a
    second in params['pg_trace'] (Sampler)."""
    spec_p = policies.parse(policy)
    if spec_p.kind not in ('static', 'tiertune', 'no-tier'):
        raise policies.PolicyError(f'{policy}: the cluster backend runs static:D,H,F, '
                                   f'tiertune and no-tier')
    if not time_scale > 0:
        raise ValueError(f'time_scale must be positive, got {time_scale}')
    ratios = spec_p.ratios if spec_p.kind == 'static' and spec_p.ratios \
        else policies.CEPH_DEFAULTS
    spec = cluster_spec(scenario, ratios, time_scale, cluster_overrides)
    workdir.mkdir(parents=True, exist_ok=True)
    rundir = Path(tempfile.mkdtemp(prefix=f'{scenario.name}-', dir=workdir))
    iodir = rundir / 'io'
    iodir.mkdir()
    c = LocalCluster(rundir / 'cluster', spec)
    params: Dict[str, Any] = {'time_scale': time_scale, 'rundir': str(rundir),
                              'cluster_dir': str(c.dir),
                              'cluster_overrides': dict(cluster_overrides or {})}
    ok = False
    sampler: Optional[Sampler] = None
    try:
        log(f'{scenario.name} / {spec_p.name}: starting a cluster in {c.dir}')
        c.start()
        params['cluster_pids'] = dict(c.state['pids'])
        params['cluster'] = spec.to_dict()
        params['tier_bench_mb_s'] = dict(c.bench)
        # librbd's client cache would serve reads and absorb writes before
        # they reach the tier; the image has no object map (which would answer
        # reads of unwritten objects without asking the OSDs).
        c.ceph('config', 'set', 'client', 'rbd_cache', 'false')
        c.ceph('config', 'set', 'mgr', 'mgr_stats_period', str(MGR_STATS_PERIOD_S))
        if spec_p.kind == 'no-tier':
            # The overlay goes before the image is made: made through the
            # tier, its writes and promotions could be reported by the
            # OSDs after the run's first counters, as the run's own.
            params['tiertune'] = _setup_policy(c, spec_p.kind)
        params['image_create_attempts'] = _create_image(c, spec.base_pool, key_span(scenario),
                                                        scenario.object_size, log)
        params['image'] = {'pool': spec.base_pool, 'name': IMAGE, 'bytes': key_span(scenario),
                           'object_size': scenario.object_size, 'features': 'layering',
                           'rbd_cache': False}
        params['mgr_stats_period_s'] = MGR_STATS_PERIOD_S
        if spec_p.kind != 'no-tier':
            params['tiertune'] = _setup_policy(c, spec_p.kind)
        osds = cache_osds(c)
        sampler = Sampler(c.conf, spec.cache_pool, spec.base_pool, pg_trace=pg_trace)
        perf0 = osd_perf(c, osds)
        t0 = time.monotonic()
        wall0 = time.time()
        sampler.start(t0)
        if spec_p.kind == 'tiertune':
            c.ceph('tiertune', 'mode', spec.cache_pool, 'on')
        params['wall_start'] = wall0
        runs, ops, bench_max = _run_phases(c, scenario, time_scale, iodir, t0, wall0, log)
        time.sleep(SETTLE_S)
        perf1 = osd_perf(c, osds)
        sampler.stop()
        samples, sampler_errors = sampler.samples, sampler.errors
        sampler = None
        perf = {k: perf1[k] - perf0[k] for k in perf1}
        params['sampler'] = {'interval_s': SAMPLE_INTERVAL_S, 'samples': len(samples),
                             'errors': sampler_errors[:20], 'error_count': len(sampler_errors)}
        if len(samples) < 2:
            raise ClusterBenchError(f'the sampler got {len(samples)} samples '
                                    f'({sampler_errors[:3]})')
        history = None
        if spec_p.kind == 'tiertune':
            history = c.ceph_json('tiertune', 'history', spec.cache_pool)['history']
        if pg_trace:
            params['pg_trace'] = {
                'fields': list(PG_TRACE_FIELDS),
                'budget_objects': scenario.target_max_bytes // scenario.pg_num
                // scenario.object_size,
                'samples': [[round(s.t, 2), s.pgs] for s in samples if s.pgs is not None],
                'pool_fields': list(POOL_TRACE_FIELDS),
                'pool_samples': [[round(s.t, 2), [int(s.cache.get(k, 0))
                                                  for k in POOL_TRACE_FIELDS]]
                                 for s in samples]}
        rec = build_record(scenario, spec_p.name, runs, ops, bench_max, samples, wall0,
                           history, perf, params)
        ok = True
        return rec
    finally:
        if sampler is not None:
            sampler.stop()
        c.stop(keep_logs=not ok)
        log(f'{scenario.name} / {spec_p.name}: cluster stopped'
            + ('' if ok else f'; logs kept in {c.log_dir}'))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='cluster_backend.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scenario', required=True, type=Path)
    ap.add_argument('--policy', required=True, help="'static:D,H,F' or 'tiertune'")
    ap.add_argument('--out', required=True, type=Path)
    ap.add_argument('--workdir', type=Path, default=Path('/tmp/tiertune-bench'))
    ap.add_argument('--time-scale', type=float, default=1.0,
                    help='phase durations (and the hit-set period) times this')
    ap.add_argument('--cluster', nargs='*', default=[], metavar='KEY=VALUE',
                    help='ClusterSpec overrides (python3 -m localcluster params lists them)')
    a = ap.parse_args(argv)
    try:
        sc = scn.load(a.scenario)
        overrides = dict(kv.split('=', 1) for kv in a.cluster)
        rec = run(sc, a.policy, a.workdir, time_scale=a.time_scale,
                  cluster_overrides=overrides)
    except (scn.ScenarioError, policies.PolicyError, ValueError, KeyError) as e:
        print(f'cluster_backend.py: {e}', file=sys.stderr)
        return 2
    rec.write(a.out)
    print(json.dumps({'scenario': rec.scenario, 'policy': rec.policy, 'backend': rec.backend,
                      'metrics': rec.as_dict()['metrics']}, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
