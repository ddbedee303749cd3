"""A writeback cache tier in discrete time: per-PG state, the OSD agent's
decisions, a bandwidth/latency backend, and the clients' ops as fluid
flows over key bins (see workload.py).

What follows the OSD (ceph-tiering-internals.md, PrimaryLogPG/OSD.cc):
  * each PG's budget is target_max_bytes / pg_num; dirty and full levels
    use the agent's arithmetic (average object size + store overhead);
  * flush mode IDLE/LOW/HIGH and evict mode IDLE/SOME/FULL with the slop
    hysteresis (osd_agent_slop of the dirty ratio for flushing, of the
    full ratio for evicting; added when the PG is idle, subtracted when it
    is not); evict effort (full - target) /
    (1 - target), at least osd_agent_min_evict_effort, quantized;
  * PGs are placed on OSDs (primaries as even as the balancer makes
    them, which PG where drawn by the seed), and each OSD's agent thread
    (OSDService::agent_entry) works only the PGs of the top level of its
    own agent_queue, keyed by evict effort: those that evict (FULL first)
    before those that only flush (level 0; measured in
    bench-results/cluster/agent-priority.md), a level's PGs sharing the
    OSD evenly and what they leave unused passing down;
  * flushing is capped per OSD by in-flight agent ops: 2 (LOW) or 4 when
    a PG of the OSD's own is HIGH; each flush is one object written to
    the base, so a flush takes base latency + object / base bandwidth
    share;
  * eviction takes clean objects only, uniformly within a PG (the
    temperature test does not favour cold objects: see the reference's
    reading of it).  A PG its OSD serves while it flushes evicts as its
    flushes complete: as many per flush as the clean share of what its
    agent meets gives (evicts_per_flush), its own mix on an OSD of the
    low quota, what lies ahead of its listing position on one of the
    HIGH quota; one served without flushing evicts unpaced.  It stops at
    the full ratio less the slop, as agent_work chooses the mode again
    before each listing;
  * the agent meets objects in hash order from a position it keeps
    between calls (listing.py): after a drain that stopped part-way, the
    stretch ahead of it holds the dirty objects, not the PG's mix;
  * a PG over its budget is FULL: client writes to objects it does not
    hold wait ("waiting for cache not full") until it leaves FULL, the
    writes already in flight landing first, and then all land at once,
    taking the PG over its budget again by as many (with hit sets they
    are proxied again and their objects promoted clean); reads that miss
    are proxied;
  * with hit sets, a miss is proxied to the base and the object promoted
    afterwards (clean) by hit-set recency (0: always; N: seen in the
    current set and the N-1 newest archives) within the per-OSD promote
    throttle (objects/s and bytes/s); without hit sets every miss promotes
    at once, unthrottled, and a write then lands dirty;
  * every `osd pool set` starts new in-memory hit sets, which get the PG
    log's entries since the last archive (hit_set_apply_log): only the
    reads and proxied writes since then are lost.
Not modelled: min flush/evict ages (the scenarios use 0), omap, clones,
scrub, PG stats reporting skew, the OSDs' CPU.
Known to differ from Pacific 16.2.15 (a session-48 review; the per-OSD
HIGH quota, the hit-set refill, the evict span and the writes released
from FULL with hit sets were mended in session 49, the placement of PGs
on OSDs in session 51; strict xfails in test_sim_ceph_divergences.py):
  * Ceph also archives a hit set once it is full (bloom insert count,
    1,000 to 100,000 a set); here only when its period ends;
  * agent_delay (a PG whose pass started nothing waits 5 s);
  * flushing LOW, a completed flush also evicts its own object
    (try_flush_mark_clean); the LOW reading leaves it out (it was read
    against agent_pacing.py's measurements, which a flat +1 fits worse
    at mid shares);
  * with hit sets the temperature test thins the evictions paced by
    flushes too; here only the unpaced ones;
  * an object flushed and evicted in one completion is logged as a flush
    and an eviction (Ceph writes only the DELETE); hit_set_apply_log
    walks only the entries still in the PG log.

Clients: closed loop (threads ops in flight, each waiting for the last) or
open loop at a fixed rate (still at most threads in flight, as fio does).
Latency per op class = fixed latency + transfer time / (1 - utilization)
of the device it waits on (M/M/1-like stretch, utilization capped).

Speed: the arrays are small (PG_CLASSES rows x ~50 bins), so a step costs
what its numpy calls cost, not its arithmetic.  The step keeps its calls
few (reused sums, batched reductions, work skipped when it could only add
zeros) while doing the same floating-point operations in the same order:
a run gives the same numbers, bit for bit, as the plain version did.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from scenario import Scenario

from simulator.listing import AGENT_LISTED, ListingPosition
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
# Evictions are local deletes of clean objects, not base IO.  With no flush
# in flight nothing paces OSDService::agent_entry: it calls agent_work again
# as soon as a call returns, each call evicting up to osd_agent_max_ops of
# the objects it lists.  Measured on the local cluster (memstore cache OSDs,
# no hit sets; tools/bench/evict_rate.py, bench-results/cluster/
# evict-rate.md): at least 3,800 and 2,700 a second per OSD under way with
# 64 KiB and 1 MiB objects; with 4 MiB objects, 75 per PG, a drain ends
# within a sampling interval (at least 158 a second, the OSD map's arrival
# included), once with a 4 s gap between two batches.  This constant,
# first an assumption, is within that; the suite's seed-0 figures for
# tiertune and Ceph's defaults are the same for any value from 150 to
# 2,000 (they move at 50).
EVICT_OBJECTS_PER_S_PER_OSD = 400.0
# ... but while the OSD has flushes in flight its evictions follow their
# completions.  OSDService::agent_entry sleeps while the flush quota (agent
# ops allowed, less those in flight) is used up; when a flush completes it
# calls PrimaryLogPG::agent_work on its top PG (see _agent_shares),
# which lists AGENT_LISTED objects and starts at most the free ops: it
# evicts the clean objects it meets, flushes the first dirty one, and goes
# on evicting until it has started the free ops.  So, per flush completed,
# with p the PG's clean share: the clean objects met before the next dirty
# one, p / (1 - p), and up to osd_agent_max_ops - osd_agent_max_low_ops
# more from the listing's rest.  Measured on the local cluster
# (tools/bench/agent_pacing.py, bench-results/cluster/agent-pacing.md),
# flushing LOW: 13.4, 4.8, ~3.0, 1.4 and 1.7 evictions per flush at clean
# shares 0.9, 0.7, 0.5, 0.3 and 0.1, against 11.0, 4.3, 3.0, 2.2 and 0.95
# from this reading.
# Flushing HIGH (any PG of the OSD HIGH: four ops in flight) agent_entry
# calls agent_work with one free op when a flush completes, so it starts
# one thing: it evicts the clean objects it meets, one call each, until it
# meets a dirty one and flushes it, p / (1 - p); and the flush completed
# evicts its own object first (try_flush_mark_clean -> agent_maybe_evict,
# while the PG evicts): 1 / (1 - p) in all.  Seen in that order in an OSD
# log at debug_osd 20 over a burst that took PGs FULL at a clean share of
# about 0.3 (1.3 to 1.6 evictions per flush, 1.43 from this reading); on
# agent_pacing.py's runs HIGH measured 4.2 and 2.2 at clean shares 0.7
# and 0.5, against 3.3 and 2.0 from it (and 4.3 and 3.0 from LOW's).


def evicts_per_flush(clean_share: float, high: bool = False) -> float:
    """Evictions the agent starts per flush it completes, flushing LOW or
    HIGH (see above)."""
    p = min(max(clean_share, 0.0), 1.0)
    if p >= 1.0:
        return math.inf
    if high:
        return 1.0 + p / (1.0 - p)
    return float(evicts_per_flush_low(np.array([p]))[0])


def evicts_per_flush_low(clean_share: np.ndarray) -> np.ndarray:
    """evicts_per_flush(p) flushing LOW, per element of clean_share: the
    clean objects met before the next dirty one, p / (1 - p), and
    E[min(k, X)], X ~ Binomial(rest of the listing, p), the sum of
    P(X >= j) for the k spare ops (two, written out)."""
    k, n = OSD_AGENT_MAX_OPS - OSD_AGENT_MAX_LOW_OPS, AGENT_LISTED - 1
    assert k == 2, 'the spare ops are written out for two'
    p = np.minimum(np.maximum(clean_share, 0.0), 1.0)
    q = 1.0 - p
    none = q ** n
    one = n * p * q ** (n - 1)
    after = (1.0 - none) + (1.0 - none - one)
    before = np.divide(p, q, out=np.full_like(p, math.inf), where=q > 0)
    return before + after


# Utilization above this is treated as this: the fluid model has no queue
# of its own, and 1/(1-u) must stay finite.
UTILIZATION_CAP = 0.95
# Flush ops read the object from the cache before writing it to the base.
FLUSH_EXTRA_LATENCY_S = 0.001
# PGs are simulated in this many classes in all (quantiles of their share
# of the objects, this many divided by the OSDs on each OSD), each row
# standing for its PGs: the agent's state differs between the PGs of one
# OSD only through their share, and 256 rows cost 16 times the arithmetic
# of 16 for the same answer to within the classes' spread.
PG_CLASSES = 16
# Blocked writes released together are recorded as this many latency
# points spread over the wait (a fluid queue has no single op to follow).
# 32 put the p99 of runs that block on steps of 1/32 of a wait (62 ms on
# a 2 s one), as coarse as the differences between settings it compared.
BLOCKED_SPREAD_POINTS = 256
# While a PG is FULL or writes wait on one, a step is run as this many
# shorter ones (advance).  A FULL PG leaves FULL as soon as one eviction
# takes it to its budget and then takes every waiting write at once
# (_release_blocked), so it sits at its budget, FULL nearly all the time,
# as the OSD log showed (bench-results/cluster/full-spells.md).  In 1 s
# steps its evictions ran ahead of its writes within the step and opened
# room the next step's writes took without waiting: with PGs of 8 objects
# and writes above the base's rate (steady-small-pg-4m-fio-cluster) p99
# write 4.7 s on the simulator against 8.5 and 8.8 s on the local cluster;
# in 0.5 / 0.25 / 0.125 s steps 7.8 / 9.4 / 8.6 s (seed 0; seeds 0-2 at
# 0.25 s 6.6 to 9.4 s), bench-results/cluster/step-size.md.  Fine steps
# only while it matters: they cost their number in arithmetic.
FINE_STEPS = 4

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


# Slots of the batched M-weighted sums in TierSim._clients.  One reduction
# sums every slot: numpy sums each contiguous slot pairwise just as it sums
# that array on its own, so the figures are the same numbers as one .sum()
# per figure, for one call instead of several.
_MISS, _HIT, _ELIG_R, _ELIG_W, _CLOSED = range(5)                  # before the op count
_W_HIT, _R_HIT, _W_MISS, _R_MISS, _W_PROM, _R_PROM, _W_FULL, _OVER_W = range(8)   # after


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
    dirty: float = 0.0            # pool_levels() at the end of the step
    fill: float = 0.0


@dataclass(frozen=True)
class _DemandArrays:
    """One phase's per (PG row, bin) constants: made when the phase starts,
    not every step."""
    share: np.ndarray             # (2, rows, bins), twice: the ops one PG gets per op
    m_share: np.ndarray           # share[0] times the row's PG count
    write_read: np.ndarray        # (2, rows, bins): the write and the read fraction


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
        share /= share.sum()
        # Each PG's primary OSD, whose agent thread serves it: as many PGs
        # on each OSD as the balancer evens them to, which PG where by hash.
        primary = rng.permutation(np.arange(self.P) % self.osds)
        # A row stands for the PGs of one OSD in one class of their shares
        # (quantiles of the OSD's PGs): they fill alike and their OSD serves
        # them alike.  Rows in order of share, the fullest last.
        per_osd = max(PG_CLASSES // self.osds, 1)
        rows = [cls for o in range(self.osds)
                for pgs in [np.flatnonzero(primary == o)]
                for cls in np.array_split(pgs[np.argsort(share[pgs], kind='stable')],
                                          min(pgs.size, per_osd)) if cls.size]
        rows.sort(key=lambda r: float(share[r].mean()))
        self.m = np.array([r.size for r in rows], dtype=float)       # PGs per row
        self.w = np.array([share[r].mean() for r in rows])           # share of one PG
        self.w /= float((self.m * self.w).sum())
        self.osd_of = np.array([primary[r[0]] for r in rows])        # the rows' OSD
        self.G = self.m.size
        self.N = np.outer(self.w, bins.sizes)        # objects per (PG of the row, bin)
        # Clean and dirty side by side, so that one reduction gives both
        # per-PG sums; C and D are views (assign into them, do not rebind).
        self._cd = np.zeros((2, *self.N.shape))
        self.C = self._cd[0]                                  # cached clean
        self.D = self._cd[1]                                  # cached dirty
        self.flush_mode = np.zeros(self.G, dtype=int)
        self.evict_mode = np.zeros(self.G, dtype=int)
        self.effort = np.zeros(self.G)
        tier = scenario.tier
        self.hit_set_period = max(tier.hit_set_period_s, 1.0)
        self.hit_set_count = int(tier.hit_set_count)
        self.acc = np.zeros_like(self.N)          # accesses per object, current set
        # the PG log's entries per object since the last archive (writes,
        # promotions, flushes, evictions: not reads), which a pool change
        # puts back into the new set (pool_set)
        self.acc_log = np.zeros_like(self.N)
        # only recency reads them (no hit sets, or recency 0: never)
        self._counts_accesses = self.hit_set_count > 0 and max(
            tier.min_read_recency, tier.min_write_recency) > 0
        self.archives: List[np.ndarray] = []      # newest first
        self._archives_seen: List[np.ndarray] = []  # 1 - exp(-archive), for _recency
        self.next_roll = self.hit_set_period
        self.blocked = np.zeros(self.G)           # write ops waiting, per PG of the row
        self.listing = ListingPosition(self.G)
        self._listing_of = b''                      # _row_sums() bytes it was matched to
        self._no_rows = np.zeros(self.G, dtype=bool)
        self.blocked_since = np.full(self.G, math.nan)
        self.totals = Totals()
        self.util_base = 0.0
        self.util_cache = 0.0
        self.t = 0.0
        self.epoch = 1
        self.last_change_epoch = 1
        # What the step reuses rather than rebuilds.  numpy's cost here is
        # per call, not per element (the arrays are PG_CLASSES x bins), and
        # an array-with-array op costs half an array-with-Python-float one.
        # Constants as whole arrays rather than broadcast, for the same reason.
        self._M = self.m[:, None]
        self._m_pair = np.broadcast_to(self._M, (2, *self.N.shape)).copy()
        self._n_mask = self.N > 0
        self._n_positive = bool(self._n_mask.all())
        self._ones = np.ones_like(self.N)
        self._zeros = np.zeros_like(self.N)
        self._room_pg = np.full(self.G, self.budget / self.avg)
        self._zeros_pg = np.zeros(self.G)
        self._clean_share = np.zeros_like(self.N)
        self._sums_before = np.zeros((5, *self.N.shape))
        self._sums_after = np.zeros((8, *self.N.shape))
        self._prom = np.zeros((2, *self.N.shape))   # promoted by writes, by reads
        self._demand: Optional[Demand] = None
        self._demand_arrays: Optional[_DemandArrays] = None
        self._levels_of = b''                       # _row_sums() bytes the levels are of
        self._levels_cache = np.zeros((2, self.G))
        # choose_modes' inputs when they last gave back the modes they were
        # given: the same inputs again would give the same modes and effort.
        self._settled: Optional[Tuple[bytes, bytes, bytes, float, float, float]] = None
        self._thresholds_of: Tuple[float, ...] = ()
        # choose_modes' outputs besides the modes: which PGs are FULL, and
        # whether any is, or is in a flush mode
        self._full_pg = np.zeros(self.G, dtype=bool)
        self._any_full = self._any_flush_mode = False
        self._all_idle = np.zeros(self.G, dtype=int).tobytes()     # modes' bytes, all IDLE
        self._flush_thresholds = np.zeros((3, 2))
        self._evict_thresholds = np.zeros(3)
        self._idle_thresholds: Tuple[float, float, float] = (0.0, 0.0, 0.0)

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
        # on_pool_change -> hit_set_setup -> hit_set_create: the in-memory hit
        # set is dropped and the new one starts now (hit_set_start_stamp), so
        # the next archive is a whole period away; hit_set_apply_log then
        # inserts every PG log entry since the last archive
        # (info.hit_set.current_last_update): only the reads and the
        # proxied writes (which write no cache PG log entry) are lost.
        self.acc[:] = self.acc_log
        self.next_roll = self.t + self.hit_set_period
        return None

    # ----- the agent -------------------------------------------------------------
    def _row_sums(self) -> np.ndarray:
        """(clean, dirty) objects per PG of each row."""
        return np.add.reduce(self._cd, axis=2)

    def _levels(self, rows: np.ndarray) -> np.ndarray:
        """(dirty, full) per PG as fractions of its budget (agent arithmetic),
        from _row_sums(); kept for the same sums, as the step asks twice."""
        key = rows.tobytes()
        if key != self._levels_of:
            lv = np.empty_like(rows)
            lv[0] = rows[1]
            np.add(rows[0], rows[1], out=lv[1])
            lv *= self.avg
            lv /= self.budget
            self._levels_of, self._levels_cache = key, lv
        return self._levels_cache

    def objects(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per PG of each row, its clean and its dirty objects."""
        clean, dirty = self._row_sums()
        return clean, dirty

    def levels(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per PG dirty and full as fractions of its budget (agent arithmetic)."""
        lv = self._levels(self._row_sums())
        return lv[0].copy(), lv[1].copy()

    def _thresholds(self) -> Tuple[np.ndarray, np.ndarray]:
        """Indexed by a PG's mode: its (dirty target, dirty high) and its full
        target, the ratio plus the slop while the mode is IDLE, minus it
        otherwise (the IDLE ones also as floats, in _idle_thresholds).
        Made again only when the ratios change."""
        r = self.ratios
        ratios = (r.dirty, r.dirty_high, r.full)
        if ratios != self._thresholds_of:
            # The flush slop is the dirty ratio's, the evict slop the full
            # ratio's (agent_choose_mode: evict_slop = evict_target *
            # osd_agent_slop).
            slop = r.dirty * OSD_AGENT_SLOP
            eslop = r.full * OSD_AGENT_SLOP
            up = [x + slop for x in ratios[:2]]
            down = [x - slop for x in ratios[:2]]
            self._flush_thresholds = np.array([up, down, down])
            self._evict_thresholds = np.array([r.full + eslop, r.full - eslop, r.full - eslop])
            self._idle_thresholds = (up[0], up[1], r.full + eslop)
            self._thresholds_of = ratios
        return self._flush_thresholds, self._evict_thresholds

    def choose_modes(self, rows: Optional[np.ndarray] = None) -> None:
        if rows is None:
            rows = self._row_sums()
        r = self.ratios
        key = (rows.tobytes(), self.flush_mode.tobytes(), self.evict_mode.tobytes(),
               r.dirty, r.dirty_high, r.full)
        if key == self._settled:
            # A step's first call usually sees what its last call saw.
            return
        lv = self._levels(rows)
        if key[1] == key[2] == self._all_idle and r.dirty > 0:
            # Most calls find every PG IDLE.  They all stay so unless one
            # passes a threshold (the ratio plus the slop), which the
            # highest levels tell at the cost of one call.
            top_dirty, top_full = np.maximum.reduce(lv, axis=1).tolist()
            self._thresholds()
            dirty_at, high_at, full_at = self._idle_thresholds
            if (top_dirty <= dirty_at and top_dirty <= high_at
                    and top_full <= full_at and top_full <= 1.0):
                self.effort = np.zeros(self.G)
                self._full_pg = np.zeros(self.G, dtype=bool)
                self._any_full = self._any_flush_mode = False
                self._settled = key
                return
        dirty, full = lv
        flush_thresholds, evict_thresholds = self._thresholds()
        over = dirty[:, None] > flush_thresholds[self.flush_mode]     # target, high
        low = over[:, 0]
        if r.dirty <= 0:
            low = low | (rows[1] > 0.5)
        # IDLE < LOW < HIGH: the higher mode whose level is passed
        flush_mode = np.maximum(low, FLUSH_HIGH * over[:, 1])
        etarget = evict_thresholds[self.evict_mode]
        some, over_full = full > etarget, full > 1.0
        evict_mode = np.maximum(some, EVICT_FULL * over_full)        # IDLE < SOME < FULL
        effort = np.zeros(self.G)
        self._full_pg, self._any_full = over_full, bool(np.count_nonzero(over_full))
        self._any_flush_mode = bool(np.count_nonzero(flush_mode))
        if np.count_nonzero(some):
            # each PG's span from its own target (agent_choose_mode: span =
            # 1000000 - evict_target, the target with its slop added or taken)
            e = (full - etarget) / np.maximum(1.0 - etarget, 1e-6)
            # Clipped to 0..1 and at least the minimum: the floor of the
            # clip would only be raised again (and np.clip is slow on small
            # arrays); quantized from at least the minimum, it stays so.
            e = np.maximum(np.minimum(e, 1.0), OSD_AGENT_MIN_EVICT_EFFORT)
            e = np.floor(e / OSD_AGENT_QUANTIZE_EFFORT + 1e-9) * OSD_AGENT_QUANTIZE_EFFORT
            effort = np.where(some, e, 0.0)
        if self._any_full:
            effort = np.where(over_full, 1.0, effort)
        self.effort = effort
        settled = flush_mode.tobytes() == key[1] and evict_mode.tobytes() == key[2]
        self._settled = key if settled else None
        self.flush_mode, self.evict_mode = flush_mode, evict_mode

    # ----- one step ----------------------------------------------------------------
    def advance(self, dt: float, d: Demand) -> StepResult:
        """One step of dt, run as FINE_STEPS steps while a PG is FULL or
        writes wait on one (see FINE_STEPS); the steps' results in one."""
        if not (self._any_full or np.count_nonzero(self.blocked)):
            return self.step(dt, d)
        res = StepResult()
        for _ in range(FINE_STEPS):
            part = self.step(dt / FINE_STEPS, d)
            res.bytes_done += part.bytes_done
            res.ops_done += part.ops_done
            res.ops_hit += part.ops_hit
            res.offered = res.offered or part.offered
            res.write_lat += part.write_lat
            res.read_lat += part.read_lat
            res.blocked = res.blocked or part.blocked
        res.dirty, res.fill = part.dirty, part.fill
        return res

    # Work that could only add zeros or multiply by one is skipped (nothing
    # to flush, no PG evicting or FULL, no promotion over a PG's room, no
    # throttle, no write waiting): it would leave every count as it is.
    # (The counts never hold -0.0, the one value that adding +0.0 changes.)
    def step(self, dt: float, d: Demand) -> StepResult:
        rows = self._row_sums()
        if rows.tobytes() != self._listing_of:
            # set from outside the step (tests): the listing has not seen it
            self.listing.match(rows[0], rows[1])
        self.choose_modes(rows)
        res = StepResult()
        sim = self.sc.sim
        bw_base = sim.base_bandwidth_mib_s * MiB
        bw_cache = sim.cache_bandwidth_mib_s * MiB
        lat_base = sim.base_latency_ms / 1000.0
        S = self.S

        # --- each OSD's agent: who it serves, and how many flushes --------------
        # Unstretched: the flushes' own load on the base is what the
        # bandwidth share below caps; stretching by the last step's
        # utilization (mostly theirs) made the flush rate swing between
        # steps and drain at ~70% of the base's bandwidth.
        flush_time = lat_base + FLUSH_EXTRA_LATENCY_S + S / bw_base
        clean_pg, dirty_pg = rows
        flush_pg = self._zeros_pg
        flushes = False
        # per row: its OSD runs the HIGH quota (a PG of its own is HIGH)
        on_high = self._no_rows
        flushing = self._no_rows
        served = self._zeros_pg          # per PG of a row, its share of its OSD's agent
        evicts = bool(np.count_nonzero(self.effort))
        # (with no PG in a flush mode, flush_pg is 0 unless a PG's dirty sum
        # is below 0, which the arithmetic below would carry through)
        if self._any_flush_mode or evicts or np.minimum.reduce(dirty_pg) < 0:
            flushing = (self.flush_mode > 0) & (dirty_pg > 0.5)
            if self._any_flush_mode:
                high_pgs = np.bincount(self.osd_of, self.m * (self.flush_mode == FLUSH_HIGH),
                                       self.osds)
                on_high = (high_pgs > 0)[self.osd_of]
            flush_speed = np.where(on_high, OSD_AGENT_MAX_OPS,
                                   OSD_AGENT_MAX_LOW_OPS) / flush_time * dt
            evict_speed = self._evict_passing() * EVICT_OBJECTS_PER_S_PER_OSD * dt
            over = np.maximum(clean_pg + dirty_pg - self._stop_at(), 0.0)
            need = np.where(flushing, dirty_pg / flush_speed,
                            np.divide(np.minimum(clean_pg, over), evict_speed,
                                      out=np.zeros(self.G), where=evict_speed > 0))
            served = self._agent_shares(flushing, need)
            if np.count_nonzero(flushing):
                flush_pg = np.where(flushing, np.minimum(served * flush_speed, dirty_pg), 0.0)
            flush_pg = np.minimum(flush_pg, dirty_pg)
            flushes = bool(np.count_nonzero(flush_pg))

        # --- clients, and the base shared with the flushes -------------------------
        flush_bytes = float((self.m * flush_pg).sum()) * S if flushes else 0.0
        base_bytes = cache_bytes = 0.0
        base_share = min(1.0, bw_base * dt / flush_bytes) if flush_bytes > 0 else 1.0
        if d.active:
            res.offered = True
            full_pg = self._full_pg if self._any_full else None
            cache_bytes, base_bytes, base_share = self._clients(dt, d, full_pg, flush_bytes, res)

        # --- flush and evict -----------------------------------------------------
        nflush = nevict = 0.0
        if flushes:
            flush_pg *= base_share
            Dp = np.add.reduce(self.D, axis=1) if d.active else dirty_pg
            frac = np.divide(flush_pg, Dp, out=np.zeros_like(Dp), where=Dp > 0)
            flushed = self.D * frac[:, None]
            self.D -= flushed
            self.C += flushed
            if self._counts_accesses:
                self.acc_log += self._per_object(flushed)
            nflush = float((self.m * flushed.sum(axis=1)).sum())
        held = flushing & on_high       # flushing HIGH: not listed past a dirty object
        if evicts:
            Cp = np.add.reduce(self.C, axis=1)
            # agent_work chooses the PG's mode again before each listing, so
            # it stops evicting once the PG is back at the full ratio less
            # the slop (a 1 s step would otherwise carry it past)
            objects = self._row_sums()
            have = np.minimum(Cp, np.maximum(objects[0] + objects[1] - self._stop_at(), 0.0))
            evict_pg = np.minimum(have, served * evict_speed)
            paced = flushing & (self.effort > 0)
            if np.count_nonzero(paced):
                # A PG its OSD serves while it flushes evicts as the
                # completions wake the agent (see evicts_per_flush): on an
                # OSD of the low quota by the PG's own clean share (the
                # agent lists past dirty objects), on one of the HIGH quota
                # by what lies ahead of its listing position
                # (_met_evictions).
                allowed = evicts_per_flush_low(
                    np.divide(clean_pg, clean_pg + dirty_pg, out=np.zeros(self.G),
                              where=clean_pg + dirty_pg > 0)) * flush_pg
                if np.count_nonzero(held):
                    met_c, met_d, listed_c = self.listing.met(flush_pg)
                    most = np.minimum(self._met_evictions(met_c, met_d, flush_pg),
                                      listed_c + flush_pg)
                    allowed = np.where(held, most, allowed)
                evict_pg = np.where(paced, np.minimum(evict_pg, allowed), evict_pg)
            efrac = np.divide(evict_pg, Cp, out=np.zeros_like(Cp), where=Cp > 0)
            evicted = self.C * efrac[:, None]
            self.C -= evicted
            if self._counts_accesses:
                self.acc_log += self._per_object(evicted)
            nevict = float((self.m * evicted.sum(axis=1)).sum())
            evict_pg = np.add.reduce(evicted, axis=1)
            evicts = nevict > 0
        if flushes or evicts:
            c = self.totals.cache
            c['num_flush'] += nflush
            c['num_flush_kb'] += nflush * S / 1024
            c['num_evict'] += nevict
            c['num_evict_kb'] += nevict * S / 1024
            # As the OSD counts them: each eviction is also a write of 0 kb.
            c['num_write'] += nevict
            b = self.totals.base
            b['num_write'] += nflush
            b['num_write_kb'] += nflush * S / 1024
            base_bytes += nflush * S
            cache_bytes += nflush * S

        # --- blocked writes leave with their PG's FULL mode ------------------------
        if d.active or flushes or evicts:
            rows = self._row_sums()
        if flushes or evicts:
            # (flush_pg is all zeros unless something flushed)
            evicted_pg = evict_pg if evicts else self._zeros_pg
            # HIGH: a PG that evicts evicts each object it has just flushed,
            # behind the position; the rest it met in the listing
            after_flush = np.where(held, np.minimum(evicted_pg, flush_pg), 0.0)
            self.listing.advance(flush_pg, after_flush, evicted_pg - after_flush, held)
            # its walk takes from stretches what the key bins take evenly:
            # back to the same totals
            self.listing.match(rows[0], rows[1])
        self.choose_modes(rows)
        if self._release_blocked(dt, d, res):
            rows = self._row_sums()
        res.dirty, res.fill = self._pool_levels(rows)
        self._listing_of = rows.tobytes()

        self.util_base = base_bytes / (bw_base * dt)
        self.util_cache = cache_bytes / (bw_cache * dt)
        self.t += dt
        if self.t >= self.next_roll:
            self.archives.insert(0, self.acc.copy())
            del self.archives[self.hit_set_count:]
            if self.archives:
                self._archives_seen.insert(0, -np.expm1(-self.archives[0]))
            del self._archives_seen[self.hit_set_count:]
            self.acc[:] = 0.0
            self.acc_log[:] = 0.0
            self.next_roll += self.hit_set_period
        return res

    def _agent_shares(self, flushing: np.ndarray, need: np.ndarray) -> np.ndarray:
        """Per PG of a row, the share of its OSD's agent thread it gets this
        step, the agent_queue's way (OSDService::agent_entry): each OSD
        works only the PGs of its queue's top level, keyed by evict effort
        (a PG that flushes without evicting sits at level 0), one after
        another (agent_queue_pos); here the level's PGs share the step
        evenly instead (the same total, not the same waits:
        bench-results/cluster/full-spells.md).  `need`: the share of the
        step a PG would need on its own to do its work (flush its dirty
        objects, or evict down to its target); what a level leaves unused
        passes to the next level down, as a PG that has done its work
        leaves the level."""
        share = np.zeros(self.G)
        level = self.effort               # 0 for a PG that does not evict
        left = flushing | (level > 0)
        free = np.ones(self.osds)
        while np.count_nonzero(left):
            top = np.full(self.osds, -1.0)
            np.maximum.at(top, self.osd_of[left], level[left])
            at_top = left & (level == top[self.osd_of])
            pgs = np.bincount(self.osd_of, np.where(at_top, self.m, 0.0), self.osds)
            each = free / np.maximum(pgs, 1e-12)
            share = np.where(at_top, each[self.osd_of], share)
            free -= np.bincount(self.osd_of, np.where(at_top, self.m * np.minimum(share, need),
                                                      0.0), self.osds)
            left &= ~at_top & (free > 1e-9)[self.osd_of]
        return share

    @staticmethod
    def _met_evictions(met_c: np.ndarray, met_d: np.ndarray, flushed: np.ndarray) -> np.ndarray:
        """Per PG of a row that flushes HIGH, the most it evicts.  With every
        op of the OSD's quota a flush, agent_entry calls agent_work with one
        free op as a flush completes, and its flush quota is that op: it
        evicts the clean objects it meets one call each and flushes the
        first dirty one, so it is not listed past a dirty object it does not
        flush, and evicts the clean objects its listing meets as it flushes
        (evicts_per_flush of their share, per flush), not the PG's.  (LOW:
        the flush quota is the low ops less those in flight, so with them
        all flushing, agent_work passes dirty objects and evicts clean ones
        up to the spare ops: no such cap.)"""
        p = np.divide(met_c, met_c + met_d, out=np.zeros_like(met_c), where=met_d > 0)
        p = np.minimum(np.maximum(p, 0.0), 1.0 - 1e-12)
        return (1.0 + p / (1.0 - p)) * flushed        # evicts_per_flush(p, high=True)

    def _evict_passing(self) -> np.ndarray:
        """Per PG of a row, the share of the clean objects its agent meets
        that it evicts: where the PGs have hit sets, about the share the
        effort asks for (agent_maybe_evict's temperature test); without
        them every temperature is 0 and every clean object passes."""
        return self.effort if self.hit_set_count > 0 else (self.effort > 0).astype(float)

    def _stop_at(self) -> float:
        """Objects a PG holds when it is back at the full ratio less the
        slop, where agent_work stops evicting."""
        return (self.ratios.full * (1.0 - OSD_AGENT_SLOP)) * self.budget / self.avg

    def _release_blocked(self, dt: float, d: Demand, res: StepResult) -> bool:
        """Writes waiting on a PG that left FULL are requeued, all of them
        (agent_choose_mode: requeue_ops(waiting_for_cache_not_full)), and
        all land: each passes do_op's mode check and starts its promotion
        before any of them completes, and once promoted a write is a cache
        hit, which FULL does not stop.  So the PG overshoots its budget by
        what was waiting and stays FULL until the agent has evicted that
        much (seen in an OSD log at debug_osd 20: one eviction let four
        writes through and took the PG from 64 to 67 objects' bytes of its
        64; ceph-tiering-internals.md).  With hit sets a requeued write
        passes maybe_handle_cache_detail again and is proxied to the base
        (do_proxy_write), its object promoted afterwards, clean, where
        min_write_recency allows (the promote throttle is not applied
        here, nor the base's bandwidth to these writes).
        True if some left (C or D changed)."""
        if not np.count_nonzero(self.blocked):
            res.blocked = False
            return False
        landed_any = False
        waiting = (self.blocked > 0) & (self.evict_mode != EVICT_FULL)
        if waiting.any():
            cached = self.C + self.D
            free = np.maximum(self.N - cached, 0.0)
            free_pg = free.sum(axis=1)
            n = np.where(waiting, np.minimum(self.blocked, free_pg), 0.0)
            go = n > 0
            if go.any():
                landed_any = True
                bs = float(d.block_size or self.S)
                proxied = self.hit_set_count > 0
                # The waiting writes arrived evenly since blocked_since and
                # leave oldest first: the share f that leaves waited between
                # (1 - f) * W and W; the rest's wait starts f * W later.
                span = self.t + dt - self.blocked_since[go]
                f = n[go] / self.blocked[go]
                spread = (np.arange(BLOCKED_SPREAD_POINTS) + 0.5) / BLOCKED_SPREAD_POINTS
                pts = (span[:, None] * (1.0 - f[:, None] * spread[None, :])).ravel()
                if proxied:
                    sim = self.sc.sim
                    pts = pts + (sim.base_latency_ms / 1000.0
                                 + bs / (sim.base_bandwidth_mib_s * MiB))
                self.blocked_since[go] += f * span
                wts = np.repeat(n[go] * self.m[go] / BLOCKED_SPREAD_POINTS,
                                BLOCKED_SPREAD_POINTS)
                res.write_lat += list(zip(pts.tolist(), wts.tolist(), strict=True))
                landed = float((self.m * n).sum())
                res.ops_done += landed
                res.bytes_done += landed * bs
                landed_objects = free * np.divide(n, free_pg, out=np.zeros_like(n),
                                                  where=free_pg > 0)[:, None]
                c = self.totals.cache
                if proxied:
                    # do_op inserted the object into the current set on the
                    # op's first pass (op->hitset_inserted), so only the
                    # archives count against min_write_recency now
                    seen = self._recency(self.sc.tier.min_write_recency, current=False)
                    promoted = landed_objects if seen is None else landed_objects * seen
                    promoted_pg = np.add.reduce(promoted, axis=1)
                    self.C += promoted
                    if self._counts_accesses:
                        self.acc_log += self._per_object(promoted)
                    self.listing.land(promoted_pg, self._zeros_pg, self._zeros_pg)
                    n_promoted = float((self.m * promoted_pg).sum())
                    c['num_promote'] += n_promoted
                    b = self.totals.base
                    b['num_write'] += landed
                    b['num_write_kb'] += landed * bs / 1024
                    b['num_read'] += n_promoted
                    b['num_read_kb'] += n_promoted * self.S / 1024
                else:
                    self.D += landed_objects
                    if self._counts_accesses:
                        self.acc_log += self._per_object(landed_objects)
                    self.listing.land(self._zeros_pg, n, self._zeros_pg)
                    c['num_promote'] += landed
                    c['num_write'] += landed
                    c['num_write_kb'] += landed * bs / 1024
                self.blocked -= n
                done = go & (self.blocked <= 1e-9)
                self.blocked[done] = 0.0
                self.blocked_since[done] = math.nan
        res.blocked = bool((self.blocked > 0).any())
        return landed_any

    def _in_flight_writes(self, d: Demand) -> np.ndarray:
        """Writes one PG of each row has in flight, in objects.  The PG
        checks its evict mode as an op arrives (do_op -> agent_choose_mode)
        from stats that count completed writes only, so the writes already
        admitted land after it goes FULL: on the local cluster the pool's
        fill peaked at 1.01-1.04 with 16 writes in flight on 8 PGs of 64
        objects (bench-results/cluster/calibration*.md)."""
        return d.threads * (1.0 - d.read_fraction) * self.w

    def _per_object(self, x: np.ndarray) -> np.ndarray:
        """x / N per (row, bin), 0 where the row has no objects."""
        if self._n_positive:
            return x / self.N
        return np.divide(x, self.N, out=np.zeros_like(x), where=self._n_mask)

    def _arrays_of(self, d: Demand) -> _DemandArrays:
        if d is not self._demand or self._demand_arrays is None:
            share = self.w[:, None] * (self.bins.sizes * d.probability)[None, :]  # one PG's
            rf = d.read_fraction
            pair = (2, *share.shape)
            self._demand_arrays = _DemandArrays(
                share=np.broadcast_to(share, pair).copy(), m_share=self._M * share,
                write_read=np.broadcast_to(np.array([1 - rf, rf])[:, None, None], pair).copy())
            self._demand = d      # held, so that `is` cannot match a new one at its address
        return self._demand_arrays

    def _clients(self, dt: float, d: Demand, full_pg: Optional[np.ndarray], flush_bytes: float,
                 res: StepResult) -> Tuple[float, float, float]:
        """The clients' ops for one step: what they hit, promote, proxy or
        block on.  Returns (cache bytes, base bytes, the share of the
        planned flushes the base still has room for)."""
        sim, tier = self.sc.sim, self.sc.tier
        S, bs = self.S, float(d.block_size)
        bw_base, bw_cache = sim.base_bandwidth_mib_s * MiB, sim.cache_bandwidth_mib_s * MiB
        stretch_b = 1.0 / (1.0 - min(self.util_base, UTILIZATION_CAP))
        stretch_c = 1.0 / (1.0 - min(self.util_cache, UTILIZATION_CAP))
        lat_base, lat_cache = sim.base_latency_ms / 1000.0, sim.cache_latency_ms / 1000.0
        l_hit = lat_cache + bs / bw_cache * stretch_c
        l_proxy = lat_base + bs / bw_base * stretch_b
        l_prom_r = lat_base + S / bw_base * stretch_b + l_hit
        # a write of a whole object still promotes, but has nothing to copy
        # that matters for its latency beyond the base round trip
        prom_w_base = S if bs < S else 0.0
        l_prom_w = lat_base + prom_w_base / bw_base * stretch_b + l_hit

        arrays = self._arrays_of(d)
        share, M, C = arrays.share[0], self._M, self.C
        cached = C + self.D
        hit = self._per_object(cached)
        miss_frac = np.subtract(self._ones, hit)
        # rows whose PGs are FULL (None: none is, and their terms are zero)
        closed = None if full_pg is None else full_pg[:, None]
        open_row = None if closed is None else ~closed
        rf = d.read_fraction
        # Without hit sets every miss promotes before it is served; with
        # them a miss is proxied and the object promoted afterwards if the
        # hit sets say it is recent enough.  None: every object may promote.
        sync = self.hit_set_count <= 0
        elig_r: Optional[np.ndarray]
        elig_w: Optional[np.ndarray]
        if sync:
            elig_r = elig_w = (None if open_row is None else
                               np.broadcast_to(open_row, self.N.shape).astype(float))
        else:
            elig_r = self._eligible(tier.min_read_recency, open_row)
            elig_w = self._eligible(tier.min_write_recency, open_row)
        miss = share * miss_frac
        # each fate's share of all ops, before the throttle and the room
        a = self._sums_before
        np.multiply(self._m_pair[0], miss, out=a[_MISS])
        np.multiply(arrays.m_share, hit, out=a[_HIT])
        if elig_r is not None:
            np.multiply(a[_MISS], elig_r, out=a[_ELIG_R])
        if elig_w is not None:
            np.multiply(a[_MISS], elig_w, out=a[_ELIG_W])
        if closed is not None:
            np.multiply(a[_MISS], closed, out=a[_CLOSED])
        used = (_CLOSED if closed is not None else _ELIG_W if elig_w is not None
                else _ELIG_R if elig_r is not None else _HIT) + 1
        sums = np.add.reduce(a[:used].reshape(used, -1), axis=1).tolist()
        h = sums[_HIT]
        pr = rf * sums[_MISS if elig_r is None else _ELIG_R]
        pw = (1 - rf) * sums[_MISS if elig_w is None else _ELIG_W]
        blk = 0.0 if closed is None else (1 - rf) * sums[_CLOSED]
        flowing = max(1.0 - blk, 1e-9)
        if sync:
            px = sums[_MISS] - pr - pw - blk
            mean_lat = (h * l_hit + pr * l_prom_r + pw * l_prom_w + px * l_proxy) / flowing
            per_op_cache = h * bs + pr * (S + bs) + pw * max(S, bs)
            per_op_base = px * bs + pr * S + pw * prom_w_base
        else:
            px = sums[_MISS] - blk
            mean_lat = (h * l_hit + px * l_proxy) / flowing
            per_op_cache = h * bs + (pr + pw) * S
            per_op_base = px * bs + (pr + pw) * S
        blocked = float((self.m * self.blocked).sum()) if np.count_nonzero(self.blocked) else 0.0
        threads = max(d.threads - blocked, 0.0)
        n = threads * dt / max(mean_lat, 1e-6)        # closed loop (Little's law)
        if d.rate_bytes_s is not None:
            n = min(n, d.rate_bytes_s / bs * dt)
        # hard capacities within the step: the cache's bandwidth, and the
        # base's, shared with the agent's flushes in proportion to demand
        k = 1.0
        if n * per_op_cache > bw_cache * dt:
            k = bw_cache * dt / (n * per_op_cache)
        base_share = 1.0
        want_base = n * k * per_op_base + flush_bytes
        if want_base > bw_base * dt:
            base_share = bw_base * dt / want_base
            # Only ops that move base bytes wait for the base: whole-object
            # writes promoted without hit sets copy nothing from it.
            if per_op_base > 0:
                k *= base_share
        n *= k
        # the promote throttle, per OSD (PGs spread evenly over OSDs); the
        # synchronous promotion without hit sets does not go through it
        promo = n * (pr + pw)
        limit = dt * self.osds * min(tier.promote_max_objects_s_per_osd,
                                     tier.promote_max_mib_s_per_osd * MiB / S)
        keep = 1.0 if sync or promo <= 0 else min(1.0, limit / promo)

        ops = n * arrays.share                    # (twice)
        if self._counts_accesses:
            self.acc += self._per_object(ops[0])
        wr = ops * arrays.write_read              # write ops, read ops
        wn = wr[0]
        wr_miss = wr * miss_frac
        free = np.maximum(np.subtract(self.N, cached), self._zeros)
        prom = self._prom                         # promoted by writes, by reads
        want_r = wr_miss[1] if elig_r is None else wr_miss[1] * elig_r
        want_w = wr_miss[0] if elig_w is None else wr_miss[0] * elig_w
        if keep != 1.0:
            want_r, want_w = want_r * keep, want_w * keep
        np.minimum(want_r, free, out=prom[1])
        np.minimum(want_w, free - prom[1], out=prom[0])
        # a PG takes promotions until it is over its budget (FULL): past
        # that, a write waiting on its promotion waits on the PG
        room = np.maximum(self._room_pg + self._in_flight_writes(d) - np.add.reduce(cached, axis=1),
                          self._zeros_pg)
        want_pg = np.add.reduce(prom, axis=2)
        want = want_pg[1] + want_pg[0]
        over = want > room
        over_w = None
        if np.count_nonzero(over):
            fit = np.divide(room, want, out=np.ones_like(room), where=over)[:, None]
            if sync:
                over_w = prom[0] * (1 - fit)
            prom *= fit
        if self._counts_accesses:
            # what the PG log records: the writes that hit, the promotions
            self.acc_log += self._per_object(wn * hit + prom[0] + prom[1])
        clean_share = self._clean_share
        clean_share.fill(0.0)
        np.divide(C, cached, out=clean_share, where=cached > self._zeros)
        dirtied = np.minimum(wn * hit * clean_share, C)
        prom_pg = np.add.reduce(prom, axis=2)     # by writes, by reads
        dirtied_pg = np.add.reduce(dirtied, axis=1)
        if np.count_nonzero(prom_pg) or np.count_nonzero(dirtied_pg):
            if sync:
                self.listing.land(prom_pg[1], prom_pg[0], dirtied_pg)
            else:
                self.listing.land(prom_pg[0] + prom_pg[1], self._zeros_pg, dirtied_pg)
        if sync:
            C += prom[1] - dirtied
            self.D += prom[0] + dirtied
        else:
            C += prom[1] + prom[0] - dirtied
            self.D += dirtied

        block_pg = None if closed is None else np.add.reduce(wr_miss[0] * closed, axis=1)
        if over_w is not None:
            over_pg = np.add.reduce(over_w, axis=1)
            block_pg = over_pg if block_pg is None else block_pg + over_pg
        if block_pg is not None:
            blocking = float((self.m * block_pg).sum())
            if blocking > threads:
                block_pg *= threads / blocking             # only so many threads to block
            newly = (block_pg > 0) & np.isnan(self.blocked_since)
            self.blocked_since[newly] = self.t
            self.blocked += block_pg

        z = self._sums_after
        m_wr = self._m_pair * wr
        np.multiply(m_wr, hit, out=z[_W_HIT:_R_HIT + 1])
        np.multiply(m_wr, miss_frac, out=z[_W_MISS:_R_MISS + 1])
        np.multiply(self._m_pair, prom, out=z[_W_PROM:_R_PROM + 1])
        if closed is not None:
            np.multiply(z[_W_MISS], closed, out=z[_W_FULL])
        if over_w is not None:
            np.multiply(M, over_w, out=z[_OVER_W])
        used = (_OVER_W if over_w is not None else _W_FULL if closed is not None
                else _R_PROM) + 1
        sums = np.add.reduce(z[:used].reshape(used, -1), axis=1).tolist()
        w_hit, r_hit = sums[_W_HIT], sums[_R_HIT]
        w_prom, r_prom = sums[_W_PROM], sums[_R_PROM]
        w_miss, r_miss = sums[_W_MISS], sums[_R_MISS]
        w_full = 0.0 if closed is None else sums[_W_FULL]
        if sync:
            w_over = 0.0 if over_w is None else sums[_OVER_W]
            w_px = max(w_miss - w_prom - w_full - w_over, 0.0)
            r_px = max(r_miss - r_prom, 0.0)
            served_w, served_r = w_hit + w_prom, r_hit + r_prom
            w_lat = [(l_hit, w_hit), (l_prom_w, w_prom), (l_proxy, w_px)]
            r_lat = [(l_hit, r_hit), (l_prom_r, r_prom), (l_proxy, r_px)]
            base_read_kb = (r_px * bs + r_prom * S + w_prom * prom_w_base) / 1024
        else:
            w_px, r_px = max(w_miss - w_full, 0.0), r_miss
            served_w, served_r = w_hit, r_hit
            w_lat = [(l_hit, w_hit), (l_proxy, w_px)]
            r_lat = [(l_hit, r_hit), (l_proxy, r_px)]
            base_read_kb = (r_px * bs + (r_prom + w_prom) * S) / 1024
        flowing_ops = w_hit + r_hit + w_px + r_px + (w_prom + r_prom if sync else 0.0)
        res.ops_done += flowing_ops
        res.ops_hit += w_hit + r_hit
        res.bytes_done += flowing_ops * bs
        res.write_lat += w_lat
        res.read_lat += r_lat
        c, b = self.totals.cache, self.totals.base
        c['num_read'] += served_r
        c['num_read_kb'] += served_r * bs / 1024
        c['num_write'] += served_w
        c['num_write_kb'] += served_w * bs / 1024
        c['num_promote'] += r_prom + w_prom
        b['num_read'] += r_px + r_prom + w_prom
        b['num_read_kb'] += base_read_kb
        b['num_write'] += w_px
        b['num_write_kb'] += w_px * bs / 1024
        promoted_bytes = (r_prom + w_prom) * S
        if sync:
            cache_bytes = (w_hit + r_hit) * bs + r_prom * (S + bs) + w_prom * max(S, bs)
            base_bytes = (w_px + r_px) * bs + r_prom * S + w_prom * prom_w_base
        else:
            cache_bytes = (w_hit + r_hit) * bs + promoted_bytes
            base_bytes = (w_px + r_px) * bs + promoted_bytes
        return cache_bytes, base_bytes, base_share

    def _eligible(self, need: float, open_row: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """Per (PG, bin): the fraction of objects a miss may promote, on
        PGs that are not FULL; None for all of them."""
        seen = self._recency(need)
        if open_row is None:
            return seen
        return (self._ones if seen is None else seen) * open_row

    def _recency(self, need: float, current: bool = True) -> Optional[np.ndarray]:
        """Per (PG, bin): the fraction of objects recent enough to promote;
        None for all of them.  current=False: the object is known to be in
        the current set."""
        if need <= 0 or (not current and int(need) <= 1):
            return None
        if current:
            seen = np.negative(self.acc)           # in the current set at least once:
            np.expm1(seen, out=seen)
            np.negative(seen, out=seen)            # 1 - exp(-acc)
        else:
            seen = self._ones
        for s in self._archives_seen[:int(need) - 1]:
            seen = seen * s
        return seen

    # ----- what the mgr sees ----------------------------------------------------------
    def stat_sum(self) -> Dict[str, Any]:
        clean, dirty = self._row_sums()
        objects = float((self.m * (clean + dirty)).sum())
        # PGs per mode (whole numbers: exact in any order)
        flush = np.bincount(self.flush_mode, weights=self.m, minlength=3).tolist()
        evict = np.bincount(self.evict_mode, weights=self.m, minlength=3).tolist()
        s: Dict[str, Any] = {k: int(v) for k, v in self.totals.cache.items()}
        s.update(num_objects=int(round(objects)), num_bytes=int(round(objects * self.S)),
                 num_objects_dirty=int(round(float((self.m * dirty).sum()))),
                 num_flush_mode_high=int(flush[FLUSH_HIGH]),
                 num_flush_mode_low=int(flush[FLUSH_LOW]),
                 num_evict_mode_some=int(evict[EVICT_SOME]),
                 num_evict_mode_full=int(evict[EVICT_FULL]))
        return s

    def base_stat_sum(self) -> Dict[str, Any]:
        return {k: int(v) for k, v in self.totals.base.items()}

    def _pool_levels(self, rows: np.ndarray) -> Tuple[float, float]:
        dirty, full = (np.add.reduce(self.m * self._levels(rows), axis=1) / self.P).tolist()
        return dirty, full

    def pool_levels(self) -> Tuple[float, float]:
        """Pool-level dirty and fill, fractions of target (agent arithmetic)."""
        return self._pool_levels(self._row_sums())
