"""Fitted per-pool estimates of promote, flush and evict pressure.

Pure: a pool's sample history in, a PoolModel out.  numpy only (scipy's
optimize/stats/interpolate/signal hang ceph-mgr's sub-interpreters).  Called
once per tick per cache pool, so it must stay cheap: O(history) with small
constants, no per-PG work.
"""

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .rates import HistoryEntry, Rates
from .sampling import STORE_OVERHEAD_BYTES_PER_OBJECT, AgentLevels, agent_levels
from .topology import CacheTier

MIB = 1 << 20

# --- smoothing -------------------------------------------------------------
# Short horizon: about two ticks at the default 30 s sleep_interval, so one
# odd interval (OSD stats reports arrive every few seconds, not in step with
# the tick) cannot swing the estimate alone, yet a burst shows within a minute.
SHORT_HORIZON_S = 60.0
# Long horizon: the pool's usual level, for telling a burst from steady load;
# 15 minutes spans several default hit_set_periods (1200 s / count 4) of IO.
LONG_HORIZON_S = 900.0
# Window for sums that must be exact rather than smoothed (proxied IO: the
# cache's and the base's OSDs report at different moments, so single
# intervals can be negative and only sums over many are right).  It matches
# Knobs.min_interval_s: the figures describe the current settings.
RECENT_WINDOW_S = 600.0

# --- inflow ----------------------------------------------------------------
# Below this the pool is idle whatever its history: 256 KiB/s fills a
# 1 GiB cache's dirty_ratio share in over half an hour.
IDLE_FLOOR_BPS = 256 * 1024
# ...and a pool whose usual inflow is large is idle at a small fraction of
# it: what is left is a trickle the agent absorbs without changing mode.
IDLE_FRACTION_OF_LONG = 0.05
# Quiet this long ends a burst.  OSDs report PG stats every 5 s
# (mgr_stats_period) out of step with the tick, so a single interval can
# show no writes in the middle of a burst (the recorded overwrite burst
# does); four reports in a row cannot.  Shorter than SHORT_HORIZON_S, so
# the end of a burst is seen before the short average has decayed.
IDLE_AFTER_S = 20.0
# Inflow this many times the usual level is a burst, not a new steady state.
BURST_FACTOR = 2.0

# --- fitted or not ---------------------------------------------------------
# Fewer intervals than this and one skewed stats report dominates.
FIT_MIN_SAMPLES = 5
# At least one short horizon, so the short average is not just the history.
FIT_MIN_WINDOW_S = SHORT_HORIZON_S

# --- flush -----------------------------------------------------------------
# Two coefficients and at least three degrees of freedom left for r2.
FLUSH_MIN_POINTS = 5
# The agent's flush quota is osd_agent_max_ops (4) in-flight ops per OSD when
# a PG there is HIGH, osd_agent_max_low_ops (2) otherwise: a HIGH PG should
# flush about twice as fast as a LOW one.  Only noted, never imposed.
FLUSH_PRIOR_HIGH_OVER_LOW = 2.0

# --- hits and promotion ----------------------------------------------------
# Intervals with fewer client ops/s than this give a share that is mostly
# reporting noise; they count as no client IO.
HIT_MIN_OPS_SEC = 1.0
# Points for a straight line whose slope means something.
HIT_MIN_POINTS = 10
# Fill must vary this much (5% of target) before a slope against it is more
# than the noise in the share.
HIT_MIN_FILL_SPAN = 0.05
# Promotions at this fraction of the throttle are throttled: the per-OSD
# throttle is a hard cap, but PGs (and so promotes) spread unevenly over
# OSDs, so the busiest OSD reaches it before the pool total does.
THROTTLE_FRACTION = 0.8
# Proxied shares below this are "almost everything absorbed"; at or above it
# a limiter is worth naming.
MEANINGFUL_PROXIED_SHARE = 0.05
# Intervals with client IO needed in the window before naming a limiter.
GATE_MIN_ACTIVE = 3
# A recommended promote bytes/s limit is rounded up to this.
PROMOTE_BYTES_STEP = MIB

# --- predictions -----------------------------------------------------------
# Band half-width in standard deviations of recent inflow: the typical
# spread, not a worst case (the controller keeps its own margin, horizon_s).
BAND_SIGMAS = 1.0

# --- as_dict ---------------------------------------------------------------
# Figures at or above this are byte counts or rates: whole units are enough.
ROUND_WHOLE_ABOVE = 1000.0
# Below it (ratios, r2, per-second op rates) four decimals.
ROUND_DIGITS = 4


@dataclass(frozen=True)
class Band:
    """An estimate with an uncertainty band (low <= value <= high)."""
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class PromoteLimits:
    """The per-OSD promote throttle and how many OSDs serve the cache pool
    (the module reads these from the OSD config and the OSD map)."""
    max_objects_sec_per_osd: float = 25.0
    max_bytes_sec_per_osd: float = 5 * 1024 * 1024
    osds: int = 1


# fit()'s default: Ceph's defaults, one OSD.
DEFAULT_LIMITS = PromoteLimits()


@dataclass(frozen=True)
class InflowModel:
    """Bytes per second becoming dirty in the cache: dirty growth plus what
    the agent flushed in the same interval (a flush turns dirty bytes clean)."""
    short_bps: float            # short-horizon smoothed inflow
    long_bps: float             # long-horizon smoothed inflow
    state: str                  # 'idle' | 'steady' | 'burst'
    idle_for_s: float           # how long inflow has been idle (0 if not idle)
    burst_bytes: Optional[float]    # typical (median) burst size in history
    burst_seconds: Optional[float]  # typical burst length
    bursts_seen: int


@dataclass(frozen=True)
class FlushModel:
    """Achieved flush bytes/s as a function of the PGs in flush low/high:
    flush ~= per_pg_low * n_low + per_pg_high * n_high, least squares."""
    per_pg_low_bps: Optional[float]
    per_pg_high_bps: Optional[float]
    r2: Optional[float]
    points: int

    def capacity_bps(self, n_low: int, n_high: int) -> Optional[float]:
        low, high = self.per_pg_low_bps, self.per_pg_high_bps
        if low is None and high is None:
            return None
        # One mode never seen: assume the other's rate.  For HIGH from LOW
        # that underestimates (the prior is ~2x), the safe side for a
        # controller that must not count on flushing it cannot see.
        low = high if low is None else low
        high = low if high is None else high
        assert low is not None and high is not None
        return low * n_low + high * n_high


@dataclass(frozen=True)
class EvictModel:
    evict_bps: float                 # smoothed evict bytes/s
    clean_bytes: int                 # user bytes not dirty now (what eviction can free)
    headroom_bytes: int              # target_max_bytes - user bytes (negative when over)


@dataclass(frozen=True)
class HitModel:
    """Share of client ops the cache served itself (not proxied), against
    cache occupancy (fill): hit ~= a + b * fill.  too_thin says why no curve
    was fitted (too few points, or fill did not vary enough)."""
    hit_ratio: Optional[float]       # recent smoothed share
    intercept: Optional[float]
    slope: Optional[float]
    r2: Optional[float]
    points: int
    too_thin: Optional[str]


@dataclass(frozen=True)
class PromoteGate:
    """How much client IO the cache absorbs vs proxies, and what limits it."""
    write_absorbed: Optional[float]  # fraction of client write bytes served by the cache
    read_absorbed: Optional[float]
    promote_ops_sec: float
    throttle_ops_sec: float          # PromoteLimits objects/s x osds
    limiter: str                     # 'none' | 'recency' | 'throttle' | 'unknown'
    detail: str                      # one sentence for status/eval
    recommend: Dict[str, Any]        # e.g. {'min_write_recency_for_promote': 0}; may be empty


@dataclass(frozen=True)
class Predictions:
    """Seconds until dirty reaches dirty_high (pool level) and until the
    cache reaches 100% of its target (where the OSD blocks writes), under
    the current inflow; None when not approaching (net inflow <= 0)."""
    time_to_dirty_high_s: Optional[Band]
    time_to_full_s: Optional[Band]


@dataclass(frozen=True)
class PoolModel:
    fitted: bool
    why_not: Optional[str]           # set when not fitted
    samples: int                     # history entries with rates
    window_s: float                  # time the history spans
    inflow: InflowModel
    flush: FlushModel
    evict: EvictModel
    hits: HitModel
    promote: PromoteGate
    predictions: Predictions
    notes: Sequence[str] = field(default_factory=tuple)

    def as_dict(self) -> Dict[str, Any]:
        out = _jsonable(dataclasses.asdict(self))
        assert isinstance(out, dict)
        return out


def _round(x: float) -> Optional[float]:
    if not math.isfinite(x):
        return None     # JSON has no inf/nan: an unbounded band edge is null
    if abs(x) >= ROUND_WHOLE_ABOVE:
        return float(round(x))
    return round(x, ROUND_DIGITS)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return _round(float(v))
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


# --- the history as arrays --------------------------------------------------

def _count(n: int, noun: str) -> str:
    return f'{n} {noun}' + ('' if n == 1 else 's')


def _opt(v: Optional[float]) -> float:
    return math.nan if v is None else float(v)


@dataclass(frozen=True)
class _Series:
    """One row per history entry with rates, oldest first.  NaN marks a
    figure that entry does not have (proxied IO without base counters, fill
    without a target, fill growth without the previous entry)."""
    t: np.ndarray            # monotonic time at the end of the interval
    dt: np.ndarray
    inflow: np.ndarray       # bytes/s becoming dirty, >= 0
    flush: np.ndarray
    evict: np.ndarray
    promote: np.ndarray
    served_ops: np.ndarray   # client ops/s the cache served
    read_bytes: np.ndarray
    write_bytes: np.ndarray
    px_read_ops: np.ndarray  # proxied to the base, signed (see rates.Rates)
    px_write_ops: np.ndarray
    px_read_bytes: np.ndarray
    px_write_bytes: np.ndarray
    n_low: np.ndarray        # PGs in flush LOW / HIGH at the end of the interval
    n_high: np.ndarray
    fill: np.ndarray         # fraction of target at the end of the interval
    growth: np.ndarray       # user bytes/s (promotions fill the cache too)

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def start(self) -> np.ndarray:
        return self.t - self.dt

    @property
    def proxied_ops(self) -> np.ndarray:
        """Per interval, each direction floored at 0 (NaN where unknown)."""
        return np.maximum(self.px_read_ops, 0.0) + np.maximum(self.px_write_ops, 0.0)


_SERIES_FIELDS = tuple(f.name for f in dataclasses.fields(_Series))


def _inflow_bps(r: Rates) -> float:
    """Bytes/s becoming dirty: dirty growth plus what was flushed meanwhile,
    capped by the client writes the cache served.  Nothing turns dirty
    without a client write landing in the cache (proxied writes land in the
    base), and a PG reports its writes, dirty count and flushes together,
    so the cap is exact; without it, a dirty count that moves against the
    average object size (evictions, hit set archives) reads as writes while
    the agent flushes and no client writes, and idle never comes.  The cap
    counts the agent's per-object overhead once per write (a write dirties
    at most one object), as the dirty bytes do."""
    written = r.write_bytes_sec + STORE_OVERHEAD_BYTES_PER_OBJECT * r.write_ops_sec
    return min(max(r.dirty_bytes_growth_sec + r.flush_bytes_sec, 0.0), max(written, 0.0))


def _series(history: Sequence[HistoryEntry], tier: CacheTier) -> _Series:
    rows: List[Tuple[float, ...]] = []
    prev_user: Optional[int] = None
    for e in history:
        levels = agent_levels(tier, e.sample.counters)
        r, c = e.rates, e.sample.counters
        if r is not None:
            growth = (math.nan if prev_user is None
                      else (levels.user_bytes - prev_user) / r.interval_s)
            rows.append((
                e.sample.mono, r.interval_s,
                _inflow_bps(r),
                r.flush_bytes_sec, r.evict_bytes_sec, r.promote_ops_sec,
                r.read_ops_sec + r.write_ops_sec, r.read_bytes_sec, r.write_bytes_sec,
                _opt(r.proxied_read_ops_sec), _opt(r.proxied_write_ops_sec),
                _opt(r.proxied_read_bytes_sec), _opt(r.proxied_write_bytes_sec),
                float(c.num_flush_mode_low), float(c.num_flush_mode_high),
                _opt(levels.fill), growth))
        prev_user = levels.user_bytes
    cols = np.array(rows, dtype=float).reshape(-1, len(_SERIES_FIELDS)).T
    return _Series(**dict(zip(_SERIES_FIELDS, cols, strict=True)))


# --- weighted statistics ----------------------------------------------------

def _weights(s: _Series, horizon_s: float) -> np.ndarray:
    """The time-weighted EWMA's weight on each interval: its length's share
    of the horizon, decayed by how long ago it ended.  Normalised by their
    sum (in _wmean) this is the EWMA once the history is longer than the
    horizon and the plain time-weighted mean before, so a young history is
    not dragged toward an arbitrary starting value."""
    return -np.expm1(-s.dt / horizon_s) * np.exp(-(s.t[-1] - s.t) / horizon_s)


def _wmean(x: np.ndarray, w: np.ndarray) -> Optional[float]:
    ok = ~np.isnan(x)
    total = float(w[ok].sum())
    if total <= 0.0:
        return None
    return float(np.dot(w[ok], x[ok]) / total)


def _wstd(x: np.ndarray, w: np.ndarray) -> float:
    mean = _wmean(x, w)
    if mean is None:
        return 0.0
    ok = ~np.isnan(x)
    return math.sqrt(float(np.dot(w[ok], (x[ok] - mean) ** 2) / w[ok].sum()))


def _r2(y: np.ndarray, fitted: np.ndarray) -> Optional[float]:
    """Against the mean; None when y does not vary (nothing to explain)."""
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if ss_tot <= 0.0:
        return None
    return 1.0 - float(((y - fitted) ** 2).sum()) / ss_tot


# --- inflow -----------------------------------------------------------------

@dataclass(frozen=True)
class _Run:
    """Consecutive intervals of inflow, quiet gaps shorter than IDLE_AFTER_S
    included (indices into the series, inclusive)."""
    first: int
    last: int
    bytes: float
    seconds: float


def _runs(s: _Series, active: np.ndarray) -> List[_Run]:
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return []
    gaps = s.start[idx[1:]] - s.t[idx[:-1]]
    cut = np.flatnonzero(gaps >= IDLE_AFTER_S)
    firsts = np.concatenate(([idx[0]], idx[cut + 1]))
    lasts = np.concatenate((idx[cut], [idx[-1]]))
    written = np.concatenate(([0.0], np.cumsum(s.inflow * s.dt)))
    return [_Run(int(a), int(b), float(written[b + 1] - written[a]),
                 float(s.t[b] - s.start[a]))
            for a, b in zip(firsts, lasts, strict=True)]


def _quiet_for(s: _Series, active: np.ndarray) -> float:
    """Seconds since the last active interval ended (0 if the latest is
    active; the whole series if none was)."""
    if active[-1]:
        return 0.0
    idx = np.flatnonzero(active)
    since = s.t[idx[-1]] if idx.size else s.start[0]
    return float(s.t[-1] - since)


def idle_threshold_bps(long_bps: float) -> float:
    return max(IDLE_FLOOR_BPS, IDLE_FRACTION_OF_LONG * long_bps)


def _inflow(s: _Series) -> InflowModel:
    if not len(s):
        return InflowModel(0.0, 0.0, 'idle', 0.0, None, None, 0)
    short = _wmean(s.inflow, _weights(s, SHORT_HORIZON_S)) or 0.0
    long_w = _weights(s, LONG_HORIZON_S)
    long = _wmean(s.inflow, long_w) or 0.0
    active = s.inflow > idle_threshold_bps(long)
    runs = _runs(s, active)
    quiet_for = _quiet_for(s, active)
    open_run = runs[-1] if runs and quiet_for < IDLE_AFTER_S else None
    # A run starting with the history began before it: its size is unknown.
    done = [r for r in runs if r is not open_run and r.first > 0]

    idle = not active[-1] and (short < idle_threshold_bps(long) or quiet_for >= IDLE_AFTER_S)
    burst = False
    if not idle:
        burst = short > BURST_FACTOR * long
        if open_run is not None and open_run.first > 0 and open_run.seconds > 0:
            # A young history's long average already holds the burst: compare
            # the run with the level before it began.
            before = _wmean(s.inflow[:open_run.first], long_w[:open_run.first]) or 0.0
            burst = burst or open_run.bytes / open_run.seconds > BURST_FACTOR * before
    return InflowModel(
        short_bps=short, long_bps=long,
        state='idle' if idle else 'burst' if burst else 'steady',
        idle_for_s=quiet_for if idle else 0.0,
        burst_bytes=float(np.median([r.bytes for r in done])) if done else None,
        burst_seconds=float(np.median([r.seconds for r in done])) if done else None,
        bursts_seen=len(done))


# --- flush ------------------------------------------------------------------

def _single_coefficient(x: np.ndarray, y: np.ndarray) -> float:
    """Least squares y ~= c * x through the origin, c >= 0."""
    return max(float(np.dot(x, y) / np.dot(x, x)), 0.0)


def _nonnegative_pair(a: np.ndarray, y: np.ndarray,
                      notes: List[str]) -> Tuple[float, float]:
    """Two-column least squares with both coefficients >= 0: the free fit if
    it is, else the better of the one-column fits with the other clipped to 0
    (refitting the kept one, which the clipped one was compensating)."""
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    if (coef >= 0).all():
        return float(coef[0]), float(coef[1])
    notes.append(f'flush: the free fit gave LOW {coef[0] / MIB:.2f} and HIGH '
                 f'{coef[1] / MIB:.2f} MiB/s per PG; the negative one is set to 0')
    low = (_single_coefficient(a[:, 0], y), 0.0)
    high = (0.0, _single_coefficient(a[:, 1], y))

    def sse(c: Tuple[float, float]) -> float:
        return float(((a @ np.array(c) - y) ** 2).sum())
    return low if sse(low) <= sse(high) else high


def _flush(s: _Series, notes: List[str]) -> FlushModel:
    used = (s.n_low + s.n_high) > 0
    points = int(used.sum())
    if points < FLUSH_MIN_POINTS:
        notes.append(f'flush: {_count(points, "interval")} with a PG in a flush mode, '
                     f'need {FLUSH_MIN_POINTS}')
        return FlushModel(None, None, None, points)
    a = np.column_stack((s.n_low[used], s.n_high[used]))
    y = s.flush[used]
    low: Optional[float]
    high: Optional[float]
    if int(np.linalg.matrix_rank(a)) == 2:
        low, high = _nonnegative_pair(a, y, notes)
        if low > 0 and not (FLUSH_PRIOR_HIGH_OVER_LOW / 2 <= high / low
                            <= FLUSH_PRIOR_HIGH_OVER_LOW * 2):
            notes.append(f'flush: HIGH flushes {high / low:.1f}x LOW per PG; the agent\'s '
                         f'4 vs 2 in-flight ops per OSD suggest about '
                         f'{FLUSH_PRIOR_HIGH_OVER_LOW:.0f}x')
    elif not a[:, 1].any():
        low, high = _single_coefficient(a[:, 0], y), None
        notes.append('flush: only LOW mode seen; one per-PG coefficient, HIGH assumed equal '
                     '(the agent allows it about twice the in-flight ops)')
    elif not a[:, 0].any():
        low, high = None, _single_coefficient(a[:, 1], y)
        notes.append('flush: only HIGH mode seen; one per-PG coefficient, LOW assumed equal '
                     '(the agent allows it about half the in-flight ops)')
    else:
        low = high = _single_coefficient(a.sum(axis=1), y)
        notes.append('flush: LOW and HIGH PG counts moved together; one coefficient for both')
    fitted = a @ np.array([low if low is not None else 0.0,
                           high if high is not None else 0.0])
    return FlushModel(low, high, _r2(y, fitted), points)


# --- evict ------------------------------------------------------------------

def byte_budget(tier: CacheTier, levels: AgentLevels) -> Optional[float]:
    """The user bytes at 100% of target as the agent measures it: the
    larger of the bytes and objects fractions binds, so the smaller budget
    (target_max_objects at today's average object size) wins."""
    budgets: List[float] = []
    if tier.target_max_bytes > 0:
        budgets.append(float(tier.target_max_bytes))
    if tier.target_max_objects > 0 and levels.user_objects > 0:
        budgets.append(tier.target_max_objects * levels.user_bytes / levels.user_objects)
    return min(budgets) if budgets else None


def _evict(s: _Series, tier: CacheTier, levels: Optional[AgentLevels]) -> EvictModel:
    evict = (_wmean(s.evict, _weights(s, SHORT_HORIZON_S)) or 0.0) if len(s) else 0.0
    if levels is None:
        return EvictModel(evict, 0, 0)
    budget = byte_budget(tier, levels)
    return EvictModel(evict_bps=evict,
                      clean_bytes=max(levels.user_bytes - levels.dirty_bytes, 0),
                      headroom_bytes=int(budget - levels.user_bytes) if budget else 0)


# --- hits -------------------------------------------------------------------

def _recent(s: _Series) -> np.ndarray:
    return s.t >= s.t[-1] - RECENT_WINDOW_S


def _absorbed(served: np.ndarray, proxied: np.ndarray, dt: np.ndarray) -> Optional[float]:
    """Share served over a window, from sums (single intervals' proxied
    figures can be negative; the sums are exact)."""
    sv = float(np.dot(served, dt))
    px = max(float(np.dot(proxied, dt)), 0.0)
    return sv / (sv + px) if sv + px > 0 else None


def _hits(s: _Series) -> HitModel:
    if not len(s):
        return HitModel(None, None, None, None, 0, 'no samples with rates yet')
    proxied = s.proxied_ops
    total = s.served_ops + proxied
    known = ~np.isnan(proxied)
    active = known & (total > HIT_MIN_OPS_SEC)
    window = known & _recent(s)
    hit_ratio = None
    if (active & window).any():
        hit_ratio = _absorbed(s.served_ops[window],
                              (s.px_read_ops + s.px_write_ops)[window], s.dt[window])
    used = active & ~np.isnan(s.fill)
    points = int(used.sum())
    too_thin: Optional[str] = None
    if np.isnan(s.fill).all():
        too_thin = 'no target_max_bytes/objects: fill is unknown'
    elif not known.any():
        too_thin = 'no base pool counters: proxied IO is unknown'
    elif points < HIT_MIN_POINTS:
        too_thin = f'{_count(points, "point")}, need {HIT_MIN_POINTS}'
    else:
        fill = s.fill[used]
        span = float(fill.max() - fill.min())
        if span < HIT_MIN_FILL_SPAN:
            too_thin = f'fill varied only {span:.3f}, need {HIT_MIN_FILL_SPAN}'
    if too_thin is not None:
        return HitModel(hit_ratio, None, None, None, points, too_thin)
    share = s.served_ops[used] / total[used]
    slope, intercept = np.polyfit(s.fill[used], share, 1)
    r2 = _r2(share, intercept + slope * s.fill[used])
    return HitModel(hit_ratio, float(intercept), float(slope), r2, points, None)


# --- promote gate -----------------------------------------------------------

def _pct(x: float) -> str:
    return f'{100 * x:.0f}%'


def _promote(s: _Series, tier: CacheTier, limits: PromoteLimits,
             levels: Optional[AgentLevels]) -> PromoteGate:
    throttle_ops = limits.max_objects_sec_per_osd * limits.osds
    throttle_bytes = limits.max_bytes_sec_per_osd * limits.osds

    def gate(limiter: str, detail: str, recommend: Optional[Dict[str, Any]] = None,
             write: Optional[float] = None, read: Optional[float] = None,
             promote: float = 0.0) -> PromoteGate:
        return PromoteGate(write, read, promote, throttle_ops, limiter, detail,
                           recommend or {})

    if not len(s):
        return gate('unknown', 'no samples with rates yet')
    promote_now = _wmean(s.promote, _weights(s, SHORT_HORIZON_S)) or 0.0
    known = ~np.isnan(s.px_write_bytes)
    window = known & _recent(s)
    if not window.any():
        return gate('unknown', 'no base pool counters: proxied IO is unknown',
                    promote=promote_now)
    write = _absorbed(s.write_bytes[window], s.px_write_bytes[window], s.dt[window])
    read = _absorbed(s.read_bytes[window], s.px_read_bytes[window], s.dt[window])
    active = window & (s.served_ops + s.proxied_ops > HIT_MIN_OPS_SEC)
    n_active = int(active.sum())
    span = f'the last {float(s.t[-1] - s.start[window].min()):.0f} s'
    if n_active < GATE_MIN_ACTIVE:
        return gate('unknown', f'{_count(n_active, "interval")} with client IO in {span}, '
                    f'need {GATE_MIN_ACTIVE}', write=write, read=read, promote=promote_now)

    busy_s = float(s.dt[active].sum())
    promote_busy = float(np.dot(s.promote[active], s.dt[active])) / busy_s
    proxied_busy = max(float(np.dot((s.px_read_ops + s.px_write_ops)[window],
                                    s.dt[window])), 0.0) / busy_s
    avg_obj = (levels.user_bytes / levels.user_objects
               if levels is not None and levels.user_objects else 0.0)
    load = max(promote_busy / throttle_ops if throttle_ops > 0 else 0.0,
               promote_busy * avg_obj / throttle_bytes if throttle_bytes > 0 else 0.0)
    absorbed = ' and '.join(f'{_pct(x)} of {kind} bytes'
                            for x, kind in ((write, 'write'), (read, 'read')) if x is not None)
    shares = f'the cache absorbed {absorbed or "no client bytes"} over {span}'
    promotes = (f'promotes ran at {promote_busy:.1f}/s while busy, {100 * load:.0f}% of '
                f'the throttle ({throttle_ops:.0f} objects/s, '
                f'{throttle_bytes / MIB:.0f} MiB/s over {_count(limits.osds, "OSD")})')
    write_px = 1.0 - write if write is not None else 0.0
    read_px = 1.0 - read if read is not None else 0.0
    if max(write_px, read_px) < MEANINGFUL_PROXIED_SHARE:
        return gate('none', f'{shares}: almost nothing is proxied to the base',
                    write=write, read=read, promote=promote_now)

    if load >= THROTTLE_FRACTION:
        return gate('throttle', f'{shares}; {promotes}, with {proxied_busy:.1f} ops/s '
                    'still proxied', write=write, read=read,
                    promote=promote_now,
                    recommend=_throttle_recommend(promote_busy + proxied_busy, avg_obj, limits))
    recommend: Dict[str, Any] = {}
    for share, key in ((write_px, 'min_write_recency_for_promote'),
                       (read_px, 'min_read_recency_for_promote')):
        recency = int(getattr(tier, key))
        if share >= MEANINGFUL_PROXIED_SHARE and recency >= 1:
            recommend[key] = recency - 1
    if recommend:
        names = ' and '.join(f'{k} {getattr(tier, k)}' for k in recommend)
        return gate('recency', f'{shares}; {promotes}; {names} keeps the rest out',
                    recommend=recommend, write=write, read=read, promote=promote_now)
    # With bloom hit sets a write to an uncached object is proxied and only
    # then promoted (clean), whatever the recency: neither knob helps.
    return gate('none', f'{shares}; {promotes} and recency is already 0: the rest is first '
                'touches of uncached objects, which the cache proxies and then promotes',
                write=write, read=read, promote=promote_now)


def _throttle_recommend(demand_ops: float, avg_obj: float,
                        limits: PromoteLimits) -> Dict[str, Any]:
    """Per-OSD limits that would let every proxied op's object be promoted."""
    osds = max(limits.osds, 1)
    out: Dict[str, Any] = {}
    objects = math.ceil(demand_ops / osds)
    if objects > limits.max_objects_sec_per_osd:
        out['osd_tier_promote_max_objects_sec'] = objects
    if avg_obj > 0:
        need = math.ceil(demand_ops * avg_obj / osds / PROMOTE_BYTES_STEP) * PROMOTE_BYTES_STEP
        if need > limits.max_bytes_sec_per_osd:
            out['osd_tier_promote_max_bytes_sec'] = need
    return out


# --- predictions ------------------------------------------------------------

def _time_to(remaining: float, rate: float, spread: float) -> Optional[Band]:
    """Seconds to cover `remaining` bytes at `rate` bytes/s, with rate
    +/- BAND_SIGMAS * spread as the band; an edge that never gets there is inf."""
    if rate <= 0:
        return None
    remaining = max(remaining, 0.0)
    fast, slow = rate + BAND_SIGMAS * spread, rate - BAND_SIGMAS * spread
    return Band(value=remaining / rate, low=remaining / fast,
                high=remaining / slow if slow > 0 else (math.inf if remaining else 0.0))


def _current_flush_bps(history: Sequence[HistoryEntry], flush: FlushModel) -> float:
    """What the agent flushes now: nothing with every PG idle (whatever the
    last interval showed, it has stopped), else the model's capacity at the
    PGs' modes, else the last measured rate."""
    last = history[-1]
    n_low = last.sample.counters.num_flush_mode_low
    n_high = last.sample.counters.num_flush_mode_high
    if n_low + n_high == 0:
        return 0.0
    capacity = flush.capacity_bps(n_low, n_high)
    if capacity is not None:
        return capacity
    return last.rates.flush_bytes_sec if last.rates is not None else 0.0


def _predictions(s: _Series, history: Sequence[HistoryEntry], tier: CacheTier,
                 levels: Optional[AgentLevels], inflow: InflowModel,
                 flush: FlushModel) -> Predictions:
    if not len(s) or levels is None:
        return Predictions(None, None)
    budget = byte_budget(tier, levels)
    if budget is None:
        return Predictions(None, None)
    w = _weights(s, SHORT_HORIZON_S)
    # Idle means no inflow now, whatever the short average still remembers
    # of the last burst (it keeps 70% of it 20 s on).
    now_bps = 0.0 if inflow.state == 'idle' else inflow.short_bps
    net = now_bps - _current_flush_bps(history, flush)
    to_dirty_high = _time_to(tier.ratios.dirty_high * budget - history[-1].dirty_bytes,
                             net, _wstd(s.inflow, w))
    # Likewise the fill stops growing when promotions and writes stop.
    growing = ~np.isnan(s.growth) & (s.growth > IDLE_FLOOR_BPS)
    growth = _wmean(s.growth, w) if _quiet_for(s, growing) < IDLE_AFTER_S else None
    to_full = (_time_to(budget - levels.user_bytes, growth, _wstd(s.growth, w))
               if growth is not None else None)
    return Predictions(to_dirty_high, to_full)


# --- the model --------------------------------------------------------------

def _why_not(tier: CacheTier, samples: int, window_s: float) -> Optional[str]:
    reasons = []
    if not tier.has_target:
        reasons.append('no target_max_bytes/objects: the agent never flushes or evicts')
    if samples < FIT_MIN_SAMPLES:
        reasons.append(f'{_count(samples, "sample")} with rates, need {FIT_MIN_SAMPLES}')
    if window_s < FIT_MIN_WINDOW_S:
        reasons.append(f'history spans {window_s:.0f} s, need {FIT_MIN_WINDOW_S:.0f} s')
    return '; '.join(reasons) if reasons else None


def fit(history: Sequence[HistoryEntry], tier: CacheTier,
        limits: PromoteLimits = DEFAULT_LIMITS) -> PoolModel:
    """The pool's model from its history (oldest first).  Never raises on a
    short or empty history: what cannot be estimated is None, and fitted
    says whether the whole is worth acting on."""
    s = _series(history, tier)
    levels = agent_levels(tier, history[-1].sample.counters) if history else None
    window_s = float(history[-1].sample.mono - history[0].sample.mono) if history else 0.0
    notes: List[str] = []
    inflow = _inflow(s)
    flush = _flush(s, notes)
    why_not = _why_not(tier, len(s), window_s)
    return PoolModel(
        fitted=why_not is None, why_not=why_not, samples=len(s), window_s=window_s,
        inflow=inflow, flush=flush, evict=_evict(s, tier, levels), hits=_hits(s),
        promote=_promote(s, tier, limits, levels),
        predictions=_predictions(s, history, tier, levels, inflow, flush),
        notes=tuple(notes))
