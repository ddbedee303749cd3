"""A writeback cache tier in discrete time: per-PG state, the OSD agent's
decisions, a bandwidth/latency backend, and the clients' ops as fluid
flows over key bins (see workload.py).

What follows the OSD (ceph-tiering-internals.md, PrimaryLogPG/OSD.cc):
  * each PG's budget is target_max_bytes / pg_num; dirty and full levels
    use the agent's arithmetic (average object size + store overhead);
  * flush mode IDLE/LOW/HIGH and evict mode IDLE/SOME/FULL with the slop
    hysteresis (osd_agent_slop of the dirty ratio, added when the PG is
    idle, subtracted when it is not); evict effort (full - target) /
    (1 - target), at least osd_agent_min_evict_effort, quantized;
  * flushing is capped per OSD by in-flight agent ops: 2 (LOW) or 4 when
    any PG on the OSD is HIGH; each flush is one object written to the
    base, so a flush takes base latency + object / base bandwidth share;
  * eviction takes clean objects only, uniformly (the temperature test
    does not favour cold objects: see the reference's reading of it);
  * a PG over its budget is FULL: client writes to objects it does not
    hold wait ("waiting for cache not full") until it leaves FULL; reads
    that miss are proxied;
  * promotion by hit-set recency (0: always; N: the object was seen in the
    current set and the N-1 newest archives) and the per-OSD promote
    throttle (objects/s and bytes/s); a promotion that is not allowed
    proxies the op to the base;
  * every `osd pool set` drops the PGs' in-memory hit sets.
Not modelled: min flush/evict ages (the scenarios use 0), omap, clones,
scrub, PG stats reporting skew, the OSDs' CPU.

Clients: closed loop (threads ops in flight, each waiting for the last) or
open loop at a fixed rate (still at most threads in flight, as fio does).
Latency per op class = fixed latency + transfer time / (1 - utilization)
of the device it waits on (M/M/1-like stretch, utilization capped).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from scenario import Scenario
from simulator.workload import Demand, KeyBins

MiB = float(1 << 20)
MICRO = 1_000_000

# OSD agent constants (16.2.15 defaults, ceph-conf -D).
OSD_AGENT_SLOP = 0.02
OSD_AGENT_MAX_OPS = 4          # in-flight agent ops per OSD with a HIGH PG
OSD_AGENT_MAX_LOW_OPS = 2      # ... otherwise
OSD_AGENT_MIN_EVICT_EFFORT = 0.1
OSD_AGENT_QUANTIZE_EFFORT = 0.1
STORE_OVERHEAD_BYTES_PER_OBJECT = 300   # BlueStore's estimate in the agent
# Evictions are local deletes of clean objects, not base IO: an assumption
# of how many one OSD's agent completes per second at full effort (it
# lists 10 objects per agent_work pass; a pass takes milliseconds).
EVICT_OBJECTS_PER_S_PER_OSD = 400.0
# Utilization above this is treated as this: the fluid model has no queue
# of its own, and 1/(1-u) must stay finite.
UTILIZATION_CAP = 0.95
# Flush ops read the object from the cache before writing it to the base.
FLUSH_EXTRA_LATENCY_S = 0.001
# Blocked writes released together are recorded as this many latency
# points spread over the wait (a fluid queue has no single op to follow).
BLOCKED_SPREAD_POINTS = 8

FLUSH_IDLE, FLUSH_LOW, FLUSH_HIGH = 0, 1, 2
EVICT_IDLE, EVICT_SOME, EVICT_FULL = 0, 1, 2


@dataclass
class Ratios:
    dirty: float
    dirty_high: float
    full: float


@dataclass
class Totals:
    """Cumulative counters, the way PG stat_sum keeps them (pool level)."""
    cache: Dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ('num_read', 'num_read_kb', 'num_write', 'num_write_kb', 'num_flush', 'num_flush_kb',
         'num_evict', 'num_evict_kb', 'num_promote'), 0.0))
    base: Dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ('num_read', 'num_read_kb', 'num_write', 'num_write_kb'), 0.0))


@dataclass
class StepResult:
    """What one step did, for the metrics."""
    bytes_done: float = 0.0
    ops_done: float = 0.0
    ops_hit: float = 0.0
    offered: bool = False
    write_lat: List[Tuple[float, float]] = field(default_factory=list)  # (seconds, ops)
    read_lat: List[Tuple[float, float]] = field(default_factory=list)
    blocked: bool = False


class TierSim:
    def __init__(self, scenario: Scenario, bins: KeyBins, ratios: Ratios,
                 seed: int = 0) -> None:
        self.sc = scenario
        self.bins = bins
        self.ratios = ratios
        self.P = scenario.pg_num
        self.osds = max(int(scenario.sim.cache_osds), 1)
        self.S = float(scenario.object_size)
        self.budget = scenario.target_max_bytes / self.P
        self.avg = self.S + STORE_OVERHEAD_BYTES_PER_OBJECT
        rng = np.random.default_rng(seed)
        # Objects land on PGs by hash: a multinomial share per PG, the same
        # for every bin.  Drawn for as many objects as the target holds, so
        # the PGs' levels spread as a cache's worth of objects hashed into
        # pg_num PGs does (16 objects per PG: about +-25%): the fuller PGs
        # reach a ratio, and FULL, before the pool average does.
        share = rng.multinomial(max(int(scenario.target_max_bytes // self.S), self.P),
                                np.full(self.P, 1.0 / self.P)).astype(float)
        self.w = share / share.sum()
        self.N = np.outer(self.w, bins.sizes)                 # objects per (PG, bin)
        self.C = np.zeros_like(self.N)                        # cached clean
        self.D = np.zeros_like(self.N)                        # cached dirty
        self.osd_of = np.arange(self.P) % self.osds           # primary OSD per PG
        self.flush_mode = np.zeros(self.P, dtype=int)
        self.evict_mode = np.zeros(self.P, dtype=int)
        self.effort = np.zeros(self.P)
        tier = scenario.tier
        self.hit_set_period = max(tier.hit_set_period_s, 1.0)
        self.hit_set_count = 4
        self.acc = np.zeros_like(self.N)          # accesses per object, current set
        self.archives: List[np.ndarray] = []      # newest first
        self.next_roll = self.hit_set_period
        self.blocked = np.zeros(self.P)           # write ops waiting, per PG
        self.blocked_since = np.full(self.P, math.nan)
        self.totals = Totals()
        self.util_base = 0.0
        self.util_cache = 0.0
        self.t = 0.0
        self.epoch = 1
        self.last_change_epoch = 1

    # ----- the mon's side ------------------------------------------------------
    def pool_set(self, var: str, val: str) -> Optional[str]:
        """`osd pool set cache VAR VAL`, as the mon takes it."""
        names = {'cache_target_dirty_ratio': 'dirty', 'cache_target_dirty_high_ratio':
                 'dirty_high', 'cache_target_full_ratio': 'full'}
        if var not in names:
            return f'unknown var {var}'
        try:
            f = float(val)
        except ValueError:
            return f'invalid value {val!r}'
        if not 0.0 <= f <= 1.0:
            return 'value must be in the range 0..1'
        setattr(self.ratios, names[var], round(f * MICRO) / MICRO)
        self.epoch += 1
        self.last_change_epoch = self.epoch
        # on_pool_change -> hit_set_setup: the in-memory hit sets are dropped
        self.acc[:] = 0.0
        return None

    # ----- the agent -------------------------------------------------------------
    def levels(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per PG dirty and full as fractions of its budget (agent arithmetic)."""
        dirty = self.D.sum(axis=1) * self.avg / self.budget
        full = (self.C.sum(axis=1) + self.D.sum(axis=1)) * self.avg / self.budget
        return dirty, full

    def choose_modes(self) -> None:
        dirty, full = self.levels()
        r = self.ratios
        slop = r.dirty * OSD_AGENT_SLOP
        sign = np.where(self.flush_mode == FLUSH_IDLE, 1.0, -1.0)
        target, high = r.dirty + sign * slop, r.dirty_high + sign * slop
        has_dirty = self.D.sum(axis=1) > 0.5
        self.flush_mode = np.where(dirty > high, FLUSH_HIGH,
                                   np.where((dirty > target) | ((r.dirty <= 0) & has_dirty),
                                            FLUSH_LOW, FLUSH_IDLE))
        esign = np.where(self.evict_mode == EVICT_IDLE, 1.0, -1.0)
        etarget = r.full + esign * slop
        effort = np.clip((full - etarget) / max(1.0 - etarget.min(), 1e-6), 0.0, 1.0)
        effort = np.maximum(effort, OSD_AGENT_MIN_EVICT_EFFORT)
        effort = np.floor(effort / OSD_AGENT_QUANTIZE_EFFORT + 1e-9) * OSD_AGENT_QUANTIZE_EFFORT
        self.evict_mode = np.where(full > 1.0, EVICT_FULL,
                                   np.where(full > etarget, EVICT_SOME, EVICT_IDLE))
        self.effort = np.where(self.evict_mode == EVICT_FULL, 1.0,
                               np.where(self.evict_mode == EVICT_SOME,
                                        np.maximum(effort, OSD_AGENT_MIN_EVICT_EFFORT), 0.0))

    # ----- one step ----------------------------------------------------------------
    def step(self, dt: float, d: Demand) -> StepResult:
        self.choose_modes()
        res = StepResult()
        sim, tier = self.sc.sim, self.sc.tier
        bw_base = sim.base_bandwidth_mib_s * MiB
        bw_cache = sim.cache_bandwidth_mib_s * MiB
        lat_base = sim.base_latency_ms / 1000.0
        lat_cache = sim.cache_latency_ms / 1000.0
        stretch_b = 1.0 / (1.0 - min(self.util_base, UTILIZATION_CAP))
        stretch_c = 1.0 / (1.0 - min(self.util_cache, UTILIZATION_CAP))
        S = self.S
        full_pg = self.evict_mode == EVICT_FULL

        # --- flush capacity (agent ops) ---------------------------------------
        flush_time = lat_base + FLUSH_EXTRA_LATENCY_S + S / bw_base * stretch_b
        flush_pg = np.zeros(self.P)
        if (self.flush_mode > 0).any():
            for o in range(self.osds):
                on = (self.osd_of == o) & (self.flush_mode > 0) & (self.D.sum(axis=1) > 0.5)
                if not on.any():
                    continue
                quota = OSD_AGENT_MAX_OPS if (self.flush_mode[on] == FLUSH_HIGH).any() \
                    else OSD_AGENT_MAX_LOW_OPS
                flush_pg[on] = quota / flush_time * dt / on.sum()
        flush_pg = np.minimum(flush_pg, self.D.sum(axis=1))

        # --- clients ---------------------------------------------------------------
        cached = self.C + self.D
        with np.errstate(invalid='ignore', divide='ignore'):
            hit = np.where(self.N > 0, cached / self.N, 0.0)
        if d.active:
            res.offered = True
            share = self.w[:, None] * (self.bins.sizes * d.probability)[None, :]  # op share
            eligible_r = self._recency(tier.min_read_recency)
            eligible_w = self._recency(tier.min_write_recency)
            miss = share * (1.0 - hit)
            hit_share = float((share * hit).sum())
            full_row = full_pg[:, None]
            # misses by fate, as shares of all ops (before the throttle)
            rf = d.read_fraction
            r_promote = rf * float((miss * eligible_r * ~full_row).sum())
            r_proxy = rf * float(miss.sum()) - r_promote
            w_block = (1 - rf) * float((miss * full_row).sum())
            w_promote = (1 - rf) * float((miss * eligible_w * ~full_row).sum())
            w_proxy = (1 - rf) * float(miss.sum()) - w_block - w_promote
            bs = float(d.block_size)
            l_hit = lat_cache + bs / bw_cache * stretch_c
            l_proxy = lat_base + bs / bw_base * stretch_b
            l_prom_r = lat_base + S / bw_base * stretch_b + l_hit
            l_prom_w = lat_base + (S / bw_base * stretch_b if bs < S else 0.0) + l_hit
            in_flight_blocked = float(self.blocked.sum())
            threads = max(d.threads - in_flight_blocked, 0.0)
            flowing = 1.0 - w_block
            mean_lat = (hit_share * l_hit + r_promote * l_prom_r + w_promote * l_prom_w
                        + (r_proxy + w_proxy) * l_proxy) / max(flowing, 1e-9)
            # ops issued this step: closed loop (Little) or the fixed rate,
            # never more than the free threads allow
            cap = threads / max(mean_lat, 1e-6) / max(flowing, 1e-9) if flowing > 0 \
                else threads / dt
            ops = cap if d.rate_bytes_s is None else min(d.rate_bytes_s / bs, cap)
            n = ops * dt
            # the promote throttle (per OSD; PGs spread evenly over OSDs)
            promo = n * (r_promote + w_promote)
            limit = dt * self.osds * min(tier.promote_max_objects_s_per_osd,
                                         tier.promote_max_mib_s_per_osd * MiB / S)
            keep = min(1.0, limit / promo) if promo > 0 else 1.0
            r_proxy += r_promote * (1 - keep)
            w_proxy += w_promote * (1 - keep)
            r_promote *= keep
            w_promote *= keep
            # state changes, per (PG, bin)
            ops_pb = n * share
            self.acc += np.divide(ops_pb, self.N, out=np.zeros_like(ops_pb), where=self.N > 0)
            U = np.maximum(self.N - cached, 0.0)
            wn = ops_pb * (1 - rf)
            rn = ops_pb * rf
            promoted_r = np.minimum(rn * (1 - hit) * eligible_r * ~full_row * keep, U)
            promoted_w = np.minimum(wn * (1 - hit) * eligible_w * ~full_row * keep,
                                    U - promoted_r)
            with np.errstate(invalid='ignore', divide='ignore'):
                clean_share = np.where(cached > 0, self.C / cached, 0.0)
            dirtied = np.minimum(wn * hit * clean_share, self.C)
            self.C += promoted_r - dirtied
            self.D += promoted_w + dirtied
            blocked_now = (wn * (1 - hit) * full_row).sum(axis=1)
            # blocked writes hold their threads until their PG leaves FULL
            room = max(d.threads - in_flight_blocked, 0.0)
            add = blocked_now * (min(room / blocked_now.sum(), 1.0) if blocked_now.sum() else 0.0)
            newly = (add > 0) & np.isnan(self.blocked_since)
            self.blocked_since[newly] = self.t
            self.blocked += add
            flowing_ops = n * (1 - w_block)
            res.ops_done = flowing_ops
            res.ops_hit = n * hit_share
            res.bytes_done = flowing_ops * bs
            res.write_lat += [(l_hit, float((wn * hit).sum())), (l_prom_w, n * w_promote),
                              (l_proxy, n * w_proxy)]
            res.read_lat += [(l_hit, float((rn * hit).sum())), (l_prom_r, n * r_promote),
                             (l_proxy, n * r_proxy)]
            c = self.totals.cache
            cache_r = float((rn * hit).sum()) + n * r_promote
            cache_w = float((wn * hit).sum()) + n * w_promote
            c['num_read'] += cache_r
            c['num_read_kb'] += cache_r * bs / 1024
            c['num_write'] += cache_w
            c['num_write_kb'] += cache_w * bs / 1024
            c['num_promote'] += float(promoted_r.sum() + promoted_w.sum())
            b = self.totals.base
            b['num_read'] += n * r_proxy + float(promoted_r.sum() + promoted_w.sum())
            b['num_read_kb'] += (n * r_proxy * bs + float(promoted_r.sum()) * S) / 1024
            b['num_write'] += n * w_proxy
            b['num_write_kb'] += n * w_proxy * bs / 1024
            base_bytes = n * (r_proxy + w_proxy) * bs + float(promoted_r.sum()) * S
            cache_bytes = res.bytes_done + float(promoted_r.sum() + promoted_w.sum()) * S
        else:
            base_bytes = cache_bytes = 0.0

        # --- flush and evict -----------------------------------------------------
        Dp = self.D.sum(axis=1)
        with np.errstate(invalid='ignore', divide='ignore'):
            frac = np.where(Dp > 0, flush_pg / Dp, 0.0)
        flushed = self.D * frac[:, None]
        self.D -= flushed
        self.C += flushed
        nflush = float(flushed.sum())
        Cp = self.C.sum(axis=1)
        evict_pg = np.minimum(self.effort * EVICT_OBJECTS_PER_S_PER_OSD * dt
                              * self.osds / self.P, Cp)
        with np.errstate(invalid='ignore', divide='ignore'):
            efrac = np.where(Cp > 0, evict_pg / Cp, 0.0)
        evicted = self.C * efrac[:, None]
        self.C -= evicted
        nevict = float(evicted.sum())
        c = self.totals.cache
        c['num_flush'] += nflush
        c['num_flush_kb'] += nflush * S / 1024
        c['num_evict'] += nevict
        c['num_evict_kb'] += nevict * S / 1024
        b = self.totals.base
        b['num_write'] += nflush
        b['num_write_kb'] += nflush * S / 1024
        base_bytes += nflush * S
        cache_bytes += nflush * S

        # --- blocked writes leave with their PG's FULL mode ------------------------
        self.choose_modes()
        release = (self.blocked > 0) & (self.evict_mode != EVICT_FULL)
        if release.any():
            for p in np.flatnonzero(release):
                wait = self.t + dt - self.blocked_since[p]
                pts = (np.arange(BLOCKED_SPREAD_POINTS) + 0.5) / BLOCKED_SPREAD_POINTS * wait
                res.write_lat += [(float(x), self.blocked[p] / BLOCKED_SPREAD_POINTS)
                                  for x in pts]
                res.ops_done += self.blocked[p]
                res.bytes_done += self.blocked[p] * float(d.block_size or S)
            self.blocked[release] = 0.0
            self.blocked_since[release] = math.nan
        res.blocked = bool((self.blocked > 0).any())

        self.util_base = base_bytes / (bw_base * dt)
        self.util_cache = cache_bytes / (bw_cache * dt)
        self.t += dt
        if self.t >= self.next_roll:
            self.archives.insert(0, self.acc.copy())
            del self.archives[self.hit_set_count:]
            self.acc[:] = 0.0
            self.next_roll += self.hit_set_period
        return res

    def _recency(self, need: float) -> np.ndarray:
        """Per (PG, bin): the fraction of objects a miss may promote."""
        if need <= 0:
            return np.ones_like(self.N)
        seen = -np.expm1(-self.acc)           # in the current set at least once
        for a in self.archives[:int(need) - 1]:
            seen = seen * -np.expm1(-a)
        return seen

    # ----- what the mgr sees ----------------------------------------------------------
    def stat_sum(self) -> Dict[str, Any]:
        objects = float(self.C.sum() + self.D.sum())
        s: Dict[str, Any] = {k: int(v) for k, v in self.totals.cache.items()}
        s.update(num_objects=int(round(objects)), num_bytes=int(round(objects * self.S)),
                 num_objects_dirty=int(round(float(self.D.sum()))),
                 num_flush_mode_high=int((self.flush_mode == FLUSH_HIGH).sum()),
                 num_flush_mode_low=int((self.flush_mode == FLUSH_LOW).sum()),
                 num_evict_mode_some=int((self.evict_mode == EVICT_SOME).sum()),
                 num_evict_mode_full=int((self.evict_mode == EVICT_FULL).sum()))
        return s

    def base_stat_sum(self) -> Dict[str, Any]:
        return {k: int(v) for k, v in self.totals.base.items()}

    def pool_levels(self) -> Tuple[float, float]:
        """Pool-level dirty and fill, fractions of target (agent arithmetic)."""
        dirty, full = self.levels()
        return float(dirty.mean()), float(full.mean())
