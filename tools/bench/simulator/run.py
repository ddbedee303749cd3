"""Run one scenario under one policy on the simulator: a RunRecord."""

import bisect
import math
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np
from policies import (
    CEPH_DEFAULTS,
    TIERTUNE_CONFIGS,
    PolicyError,
    PolicySpec,
    TiertuneDriver,
)
from record import SERIES_KEYS, RunRecord, throughput_stats, weighted_percentile
from scenario import Scenario

from simulator import mgr_view
from simulator.base_only import BaseOnlySim
from simulator.tier import FINE_STEPS, MiB, Ratios, StepResult, TierSim
from simulator.workload import Timeline, all_key_counts, make_bins

# The simulator's step: the agent and the clients advance this much at once.
STEP_S = 1.0
# Series in the record are aggregated to at most this many rows.
SERIES_ROWS = 1500
# Ticks the module runs over the idle, empty tier before the workload
# starts (see simulate).  Two give it one idle interval and no fitted model:
# it meets the workload as an operator's module meets the first load after
# `ceph tiertune mode <pool> on` (the cluster backend turns it on at t=0).
# More (tools/bench/warm_start.py) let it fit the idle tier and act on it
# first, as a module enabled long before the load would.
LEAD_IN_TICKS = 2
# Clairvoyant: the dirty ratio's floor and ceiling are tiertune's default
# bounds, so the reference plays by the same limits.
CLAIRVOYANT_FLOOR, CLAIRVOYANT_CEILING = 0.1, 0.6

RATIO_VARS = (('cache_target_dirty_ratio', 0), ('cache_target_dirty_high_ratio', 1),
              ('cache_target_full_ratio', 2))


def _set_all(sim: Union[TierSim, BaseOnlySim], r: Tuple[float, float, float]) -> None:
    """Set the ratios in an order that keeps them ordered (as tiertune does)."""
    cur = (sim.ratios.dirty, sim.ratios.dirty_high, sim.ratios.full)
    order = RATIO_VARS if r[0] <= cur[0] else tuple(reversed(RATIO_VARS))
    for var, i in order:
        if abs(cur[i] - r[i]) > 1e-9:
            sim.pool_set(var, f'{r[i]:.6f}')


def _clairvoyant_target(sc: Scenario, t: float) -> float:
    """Ceiling while a phase that writes runs; floor otherwise (before the
    next write phase)."""
    now = None
    for start, ph in sc.timeline():
        if start <= t:
            now = ph
    writes = now is not None and now.op in ('write', 'mixed')
    return CLAIRVOYANT_CEILING if writes else CLAIRVOYANT_FLOOR


def _step_percentile(lat: Sequence[Tuple[float, float]], q: float) -> Optional[float]:
    """record.weighted_percentile of one step's few (value, weight) points,
    in plain Python: numpy's per-call cost is most of a step's.  The same
    arithmetic (a stable sort by value, running sums of the weights, the
    first at or above q of the total), so the same number."""
    pts = sorted((p for p in lat if p[1] > 0), key=lambda p: p[0])
    if not pts:
        return None
    cum, sums = 0.0, []
    for _, w in pts:
        cum += w
        sums.append(cum)
    return pts[min(bisect.bisect_left(sums, q * cum), len(pts) - 1)][0]


def _columns(lat: List[Tuple[float, float]]) -> Tuple[np.ndarray, np.ndarray]:
    """(values, weights) of a run's latency points, as arrays once rather
    than as lists for each percentile."""
    a = np.array(lat, dtype=float).reshape(-1, 2)
    return a[:, 0], a[:, 1]


def simulate(sc: Scenario, policy: PolicySpec, seed: int = 0,
             log: Callable[[str], None] = lambda m: None,
             observe: Optional[Callable[[float, TierSim], None]] = None,
             lead_in_ticks: int = LEAD_IN_TICKS,
             watch: Optional[Callable[[float, Optional[TiertuneDriver], StepResult], None]]
             = None) -> RunRecord:
    """observe(t, sim), if given, sees the tier after each step (t: the
    step's end), for traces the record does not keep (full_spells.py).
    lead_in_ticks: tiertune's ticks over the idle tier before t=0.
    watch(t, driver, result), if given, sees tiertune's driver (None for
    other policies) and the step's result after each step
    (full_risk_check.py)."""
    if lead_in_ticks < 1:
        raise ValueError(f'lead_in_ticks must be at least 1, got {lead_in_ticks}')
    if policy.kind == 'best-static':
        raise PolicyError('best-static is a search over static runs (see run.py)')
    started = time.process_time()
    bins = make_bins(all_key_counts(sc))
    ratios = policy.ratios if policy.kind == 'static' and policy.ratios else CEPH_DEFAULTS
    sim: Union[TierSim, BaseOnlySim] = (BaseOnlySim(sc, Ratios(*ratios))
                                        if policy.kind == 'no-tier'
                                        else TierSim(sc, bins, Ratios(*ratios), seed=seed))
    timeline = Timeline(sc, bins)
    driver: Optional[TiertuneDriver] = None
    applied = 0
    config = TIERTUNE_CONFIGS.get(policy.kind)
    if config is not None:
        assert isinstance(sim, TierSim)
        get = mgr_view.getter(sim)

        def pool_set(pool_id: int, pool: str, var: str, val: str) -> Optional[str]:
            return sim.pool_set(var, val)
        tier = sc.tier
        driver = TiertuneDriver(get, pool_set, osds=sim.osds,
                                promote_objects_s=tier.promote_max_objects_s_per_osd,
                                promote_bytes_s=tier.promote_max_mib_s_per_osd * MiB, log=log,
                                config=config)
    next_tick = 0.0
    tick_s = config.sleep_interval_s if config is not None else 0.0
    if driver is not None:
        # The module runs before the workload starts: with the default two
        # ticks of the idle tier it has one idle interval, so a first burst
        # starting at t=0 is seen to start, not taken for one already under
        # way; with more it may fit the idle tier and move the ratios.
        for k in range(lead_in_ticks, 0, -1):
            driver.tick(mono=-k * tick_s, wall=1.7e9 - k * tick_s)
    # What the run starts from (the ticks before it may already have moved them).
    r0 = sim.ratios
    changes: List[Dict[str, float]] = [{'t': 0.0, 'dirty': r0.dirty,
                                        'dirty_high': r0.dirty_high, 'full': r0.full}]
    steps = int(np.ceil(sc.duration_s / STEP_S))
    # per step, as lists (cheaper to fill than arrays item by item)
    tput: List[float] = []
    offered: List[bool] = []
    dirty: List[float] = []
    fill: List[float] = []
    wp99: List[float] = []
    wl: List[Tuple[float, float]] = []
    first_repeat_s = sc.duration_s / sc.repeat
    wl_later = 0                # where in wl the writes completed after the first repeat start
    rl: List[Tuple[float, float]] = []
    blocked_s = 0.0
    total_bytes = ops = hits = 0.0
    for i in range(steps):
        t = i * STEP_S
        before = sim.epoch
        if driver is not None and t >= next_tick:
            driver.tick(mono=t, wall=1.7e9 + t)
            next_tick = t + tick_s
        elif policy.kind == 'clairvoyant':
            d = _clairvoyant_target(sc, t)
            if abs(d - sim.ratios.dirty) > 1e-9:
                _set_all(sim, (d, max(sim.ratios.dirty_high, d), sim.ratios.full))
        if sim.epoch != before:
            applied += 1
            r = sim.ratios
            changes.append({'t': t, 'dirty': r.dirty, 'dirty_high': r.dirty_high,
                            'full': r.full})
        res = sim.advance(STEP_S, timeline.at(t))
        if observe is not None and isinstance(sim, TierSim):
            observe(t + STEP_S, sim)
        if watch is not None:
            watch(t + STEP_S, driver, res)
        tput.append(res.bytes_done / STEP_S / MiB)
        offered.append(res.offered)
        total_bytes += res.bytes_done
        ops += res.ops_done
        hits += res.ops_hit
        wl += res.write_lat
        if t + STEP_S <= first_repeat_s + 1e-9:
            wl_later = len(wl)
        rl += res.read_lat
        blocked_s += STEP_S if res.blocked else 0.0
        wp99.append(_step_percentile(res.write_lat, 0.99) or math.nan)
        dirty.append(res.dirty)
        fill.append(res.fill)

    def pct(v: np.ndarray, w: np.ndarray, q: float) -> Optional[float]:
        # weighted_percentile takes any array-like (it starts with np.asarray)
        p = weighted_percentile(cast(Sequence[float], v), cast(Sequence[float], w), q)
        return None if p is None else p * 1000.0
    wv, ww = _columns(wl)
    lv, lw = _columns(wl[wl_later:]) if sc.repeat > 1 else (wv[:0], ww[:0])
    rv, rw = _columns(rl)
    wmax = float(wv[ww > 0].max()) if (ww > 0).any() else None
    metrics = {
        **throughput_stats(tput, offered, total_bytes / MiB, sc.duration_s),
        'write_lat_ms_p50': pct(wv, ww, 0.5), 'write_lat_ms_p99': pct(wv, ww, 0.99),
        'write_lat_ms_p999': pct(wv, ww, 0.999),
        'write_lat_ms_max': None if wmax is None else wmax * 1000.0,
        'read_lat_ms_p99': pct(rv, rw, 0.99),
        'write_lat_ms_p99_after_first': pct(lv, lw, 0.99),
        'blocked_write_s': blocked_s,
        'flushed_bytes': sim.totals.cache['num_flush_kb'] * 1024,
        'promotes': sim.totals.cache['num_promote'],
        'hit_ratio': hits / ops if ops > 0 else None,
        'ratio_changes': applied,
    }
    series = _aggregate(steps, np.array(tput), np.array(wp99), np.array(dirty), np.array(fill))
    return RunRecord(
        scenario=sc.name, policy=policy.name, backend='sim', metrics=metrics, series=series,
        ratio_changes=changes,
        how=(f'simulator (tools/bench/simulator), {STEP_S:g} s steps ({FINE_STEPS} of '
             f'{STEP_S / FINE_STEPS:g} s while a PG is FULL or writes wait), seed {seed}: '
             'throughput = client bytes completed per step; latencies are per-op-class '
             'model latencies weighted by op counts (blocked writes: their wait, spread '
             'evenly); blocked_write_s = steps in which some write waited on a FULL PG; '
             'hit_ratio = client ops served by the cache (hits) / all client ops; no-tier: '
             'every op at the base\'s bandwidth and latency (simulator/base_only.py)'),
        params={'step_s': STEP_S, 'fine_steps': FINE_STEPS, 'seed': seed, 'bins': bins.count,
                'pg_num': sc.pg_num,
                'cache_osds': sim.osds, 'cpu_s': round(time.process_time() - started, 2),
                'tiertune_sleep_interval_s': (config or TIERTUNE_CONFIGS['tiertune']
                                              ).sleep_interval_s,
                'tiertune_lead_in_s': lead_in_ticks * tick_s if driver is not None else 0.0,
                'tiertune_settings': dict((config or TIERTUNE_CONFIGS['tiertune']).settings)})


def _aggregate(steps: int, tput: np.ndarray, wp99: np.ndarray, dirty: np.ndarray,
               fill: np.ndarray) -> Dict[str, List[float]]:
    k = max(1, int(np.ceil(steps / SERIES_ROWS)))
    rows = int(np.ceil(steps / k))

    def agg(x: np.ndarray, how: str) -> List[float]:
        pad = np.full(rows * k, np.nan)
        pad[:steps] = x
        m = pad.reshape(rows, k)
        # A row with no write at all is NaN, and numpy warns about it.
        with np.errstate(all='ignore'), warnings.catch_warnings():
            warnings.simplefilter('ignore', RuntimeWarning)
            out = np.nanmax(m, axis=1) if how == 'max' else np.nanmean(m, axis=1)
        return [float(v) for v in out]
    cols = {'t': [float(i * k * STEP_S) for i in range(rows)],
            'throughput_mib_s': agg(tput, 'mean'), 'write_lat_ms_p99': agg(wp99 * 1000, 'max'),
            'dirty': agg(dirty, 'mean'), 'fill': agg(fill, 'mean')}
    assert tuple(cols) == SERIES_KEYS
    return cols
