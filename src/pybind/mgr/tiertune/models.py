"""Fitted per-pool estimates of promote, flush and evict pressure.

Pure: a pool's sample history in, a PoolModel out.  numpy only (scipy's
optimize/stats/interpolate/signal hang ceph-mgr's sub-interpreters).  Called
once per tick per cache pool, so it must stay cheap: O(history) with small
constants, no per-PG work.
"""

import dataclasses
import math
from collections import deque
from dataclasses import InitVar, dataclass, field
from functools import partial
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

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
    # Bytes/s clients move through the base, now and sustained (see
    # _base_client_bps): IO proxied to it, and the objects promoted from
    # it.  Writes that do not land in the cache leave the inflow idle but
    # the base busy.
    base_client_bps: float = 0.0


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


@dataclass(eq=False)   # not frozen: built every fit, and frozen fields cost more to set
class _Series:
    """One row per history entry with rates, oldest first.  NaN marks a
    figure that entry does not have (proxied IO without base counters, fill
    without a target, fill growth without the previous entry).  Read-only
    by convention (SeriesCache hands out views of its columns)."""
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
    # Figures of the same interval that several models use.  Kept as rows
    # (computed once per entry, not once per fit): numpy calls on arrays
    # this short cost more in overhead than in arithmetic.
    start: np.ndarray        # t - dt
    px_ops: np.ndarray       # px_read_ops + px_write_ops, signed (for sums)
    proxied_ops: np.ndarray  # the same, each direction floored at 0
    total_ops: np.ndarray    # served_ops + proxied_ops (NaN where unknown)
    inflow_bytes: np.ndarray  # inflow * dt: the bytes that became dirty (for _runs)
    base_bytes: np.ndarray   # proxied bytes/s _base_client_bps counts (see there)
    short_gain: np.ndarray   # the interval's EWMA weight before decay (see _weights)
    long_gain: np.ndarray
    # Per-interval masks, kept as rows for the same reason (see _row_masks).
    active: np.ndarray       # client IO (total_ops > HIT_MIN_OPS_SEC; False where unknown)
    px_known: np.ndarray     # proxied_ops is known (not NaN)
    px_write_known: np.ndarray   # px_write_bytes is known
    has_fill: np.ndarray     # fill is known
    hit_points: np.ndarray   # active and has_fill: the hit curve's points
    flushing: np.ndarray     # a PG in a flush mode (n_low + n_high > 0)
    growing: np.ndarray      # growth > IDLE_FLOOR_BPS (False where unknown)
    # The two gain rows as one (2, n) block (they are adjacent columns of
    # the caller's array): both weight vectors then cost one numpy call each
    # step instead of two.  Not kept.
    gains: InitVar[np.ndarray]
    # Figures that depend on the newest interval, which every fit uses: set
    # once in __post_init__ (functools.cached_property locks on each first
    # access, a cost of its own at this scale).
    short_w: np.ndarray = field(init=False, repr=False)  # EWMA weights (_weights)
    long_w: np.ndarray = field(init=False, repr=False)
    # Their sums, which every weighted mean of a NaN-free row divides by:
    # a sum is one of the dearest numpy calls on a short array.
    short_total: float = field(init=False, repr=False)
    long_total: float = field(init=False, repr=False)
    # The intervals ending within RECENT_WINDOW_S of the newest: a suffix,
    # since t ascends (the history is oldest first).
    recent: slice = field(init=False, repr=False)

    def __post_init__(self, gains: np.ndarray) -> None:
        newest = self.t[-1] if self.t.size else 0.0
        # _weights for both horizons at once; elementwise, so each row is
        # bit for bit what _weights gives it alone (and each row's sum what
        # the row's own sum() gives: the same pairwise summation).
        w = _weights(gains, self.t - newest, _HORIZONS)
        self.short_w, self.long_w = w
        self.short_total, self.long_total = np.add.reduce(w, axis=1).tolist()
        self.recent = slice(int(self.t.searchsorted(newest - RECENT_WINDOW_S)), None)

    def __len__(self) -> int:
        return int(self.t.size)

    def window(self, known: np.ndarray) -> Union[slice, np.ndarray]:
        """Index of the recent intervals where known: the recent slice when
        every interval is known (the usual case: a view, cheaper than a mask)."""
        if _nnz(known) == known.size:
            return self.recent
        return known & (self.t >= self.t[-1] - RECENT_WINDOW_S)


_INIT_FIELDS = tuple(f.name for f in dataclasses.fields(_Series) if f.init)
_SERIES_FIELDS = _INIT_FIELDS[:_INIT_FIELDS.index('active')]    # the float columns
_SERIES_MASKS = _INIT_FIELDS[len(_SERIES_FIELDS):]              # the bool ones
_GROWTH = _SERIES_FIELDS.index('growth')
_GAINS = _SERIES_FIELDS.index('short_gain')
_GROWING = _SERIES_MASKS.index('growing')
assert _SERIES_FIELDS[_GAINS:] == ('short_gain', 'long_gain')
# Per row of the gains block: its horizon (a column, to broadcast over the intervals).
_HORIZONS = np.array([[SHORT_HORIZON_S], [LONG_HORIZON_S]])


def _make_series(block: np.ndarray, masks: np.ndarray) -> _Series:
    """The _Series of a (columns, rows) block and its (masks, rows) block:
    one view per column."""
    return _new_series(*block, *masks, block[_GAINS:])


# _Series untyped, for _make_series: gains (the InitVar after the columns)
# goes positionally, and mypy cannot tell that *block stops before it.
_new_series: Callable[..., _Series] = _Series


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


def _floor0(x: float) -> float:
    """max(x, 0.0) as np.maximum has it: NaN stays NaN."""
    return x if x >= 0.0 or math.isnan(x) else 0.0


def _gain(dt: float, horizon_s: float) -> float:
    """An interval's share of the horizon: its EWMA weight before decay."""
    return -math.expm1(dt / -horizon_s)


def _row(e: HistoryEntry, levels: AgentLevels, prev_user: Optional[int]) -> Tuple[float, ...]:
    """The _Series row of an entry with rates; prev_user is the previous
    entry's user bytes (None for the first entry in the history).  Python
    floats do the same IEEE arithmetic as numpy's elementwise operations,
    so each figure is bit for bit what the same operation on the columns
    gives."""
    r, c = e.rates, e.sample.counters
    assert r is not None
    t, dt = e.sample.mono, r.interval_s
    growth = math.nan if prev_user is None else (levels.user_bytes - prev_user) / dt
    inflow, flush = _inflow_bps(r), r.flush_bytes_sec
    served = r.read_ops_sec + r.write_ops_sec
    px_read, px_write = _opt(r.proxied_read_ops_sec), _opt(r.proxied_write_ops_sec)
    px_read_bytes, px_write_bytes = _opt(r.proxied_read_bytes_sec), _opt(r.proxied_write_bytes_sec)
    proxied = _floor0(px_read) + _floor0(px_write)
    return (t, dt,
            inflow,
            flush, r.evict_bytes_sec, r.promote_ops_sec,
            served, r.read_bytes_sec, r.write_bytes_sec,
            px_read, px_write,
            px_read_bytes, px_write_bytes,
            float(c.num_flush_mode_low), float(c.num_flush_mode_high),
            _opt(levels.fill), growth,
            t - dt, px_read + px_write, proxied, served + proxied,
            inflow * dt, px_read_bytes + (0.0 if flush > 0.0 else px_write_bytes),
            _gain(dt, SHORT_HORIZON_S), _gain(dt, LONG_HORIZON_S))


_COLUMN = {name: i for i, name in enumerate(_SERIES_FIELDS)}
_TOTAL_OPS, _PROXIED_OPS, _PX_WRITE_BYTES, _FILL, _N_LOW, _N_HIGH = (
    _COLUMN[name] for name in ('total_ops', 'proxied_ops', 'px_write_bytes', 'fill', 'n_low',
                               'n_high'))
assert _SERIES_MASKS == ('active', 'px_known', 'px_write_known', 'has_fill', 'hit_points',
                         'flushing', 'growing')


def _row_masks(row: Tuple[float, ...]) -> Tuple[bool, ...]:
    """The _Series masks of a row, in _SERIES_MASKS order.  Python's float
    comparisons are numpy's (False with a NaN), so each is what the same
    comparison on the columns gives."""
    active = row[_TOTAL_OPS] > HIT_MIN_OPS_SEC
    fill = row[_FILL]
    has_fill = fill == fill
    return (active, row[_PROXIED_OPS] == row[_PROXIED_OPS],
            row[_PX_WRITE_BYTES] == row[_PX_WRITE_BYTES], has_fill, active and has_fill,
            row[_N_LOW] + row[_N_HIGH] > 0, row[_GROWTH] > IDLE_FLOOR_BPS)


def _series(history: Sequence[HistoryEntry], tier: CacheTier) -> _Series:
    """The whole history rebuilt as arrays (fit() without a SeriesCache)."""
    rows: List[Tuple[float, ...]] = []
    prev_user: Optional[int] = None
    for e in history:
        levels = agent_levels(tier, e.sample.counters)
        if e.rates is not None:
            rows.append(_row(e, levels, prev_user))
        prev_user = levels.user_bytes
    # Contiguous columns, as SeriesCache's: a dot product over a strided
    # array sums in another order, and the two paths must agree exactly.
    cols = np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, len(_SERIES_FIELDS)).T)
    masks = np.array([_row_masks(row) for row in rows], dtype=bool)
    return _make_series(cols, np.ascontiguousarray(masks.reshape(-1, len(_SERIES_MASKS)).T))


class SeriesCache:
    """One pool's _Series kept across ticks, so a tick converts only the
    entries added since the last (rebuilding all history_size rows every tick
    was most of fit()'s cost).  Rows live in preallocated columns, appended
    at the end and trimmed at the start as the history's deque drops its
    oldest entries; series() returns read-only views, valid until the next
    call, and after it too except for growth (and growing): later calls
    write past the rows a view holds, into fresh columns, or (the one
    exception) NaN into the growth of a row that became the history's
    first (DeferredGate relies on this).  It follows the history by entry identity, as a PoolHistory
    changes: entries appended at the end, dropped from the start.  When the
    history is not such a continuation of the one it mirrors (its newest
    entry missing, the first entry not where it should be) or the tier
    changed (fill depends on it), it rebuilds: the rows equal _series()'s."""

    def __init__(self) -> None:
        self._tier: Optional[CacheTier] = None
        self._entries: Deque[HistoryEntry] = deque()   # the entries mirrored, oldest first
        self._cols = np.empty((len(_SERIES_FIELDS), 0))
        self._masks = np.empty((len(_SERIES_MASKS), 0), dtype=bool)   # in step with _cols
        # The same buffers, read-only: series() hands out views of these, so
        # fit() can never change the mirrored rows (and no view is flagged
        # one by one).
        self._cols_ro, self._masks_ro = _read_only(self._cols), _read_only(self._masks)
        self._first = 0     # rows [_first, _end) are the rated entries of _entries
        self._end = 0
        self._prev_user: Optional[int] = None   # user bytes of the newest entry
        self.levels: Optional[AgentLevels] = None   # agent levels of the newest entry

    def series(self, history: Sequence[HistoryEntry], tier: CacheTier) -> _Series:
        self.update(history, tier)
        return self.view()

    def update(self, history: Sequence[HistoryEntry], tier: CacheTier) -> None:
        """Bring the rows up to this history: series() without the arrays."""
        if not self._follow(history, tier):
            self._rebuild(history, tier)

    def view(self) -> _Series:
        """The arrays of the rows as the last update left them."""
        return _make_series(self._cols_ro[:, self._first:self._end],
                            self._masks_ro[:, self._first:self._end])

    def _follow(self, history: Sequence[HistoryEntry], tier: CacheTier) -> bool:
        """Bring the rows up to date from the entries added and dropped since
        the last call; False when the history is not a continuation."""
        # Identity first: the module passes the same CacheTier every tick
        # until the OSD map changes (an equality test compares every field).
        if (tier is not self._tier and tier != self._tier) or not history or not self._entries:
            return False
        # New entries are those after the newest one already mirrored.
        n, last = len(history), self._entries[-1]
        added = 0
        while added < n and history[n - 1 - added] is not last:
            added += 1
        dropped = len(self._entries) - (n - added)
        if added == n or dropped < 0 or self._entries[dropped] is not history[0]:
            return False
        for _ in range(dropped):
            if self._entries.popleft().rates is not None:
                self._first += 1
        if dropped and self._entries[0].rates is not None:
            # The first entry in a history has no previous one to grow from.
            self._cols[_GROWTH, self._first] = math.nan
            self._masks[_GROWING, self._first] = False
        for i in range(n - added, n):
            self._append(history[i], tier)
        return True

    def _rebuild(self, history: Sequence[HistoryEntry], tier: CacheTier) -> None:
        self._tier = tier
        self._entries = deque()
        # Twice the history: trimming at the front then costs one move of
        # the rows every history-length appends.
        self._cols = np.empty((len(_SERIES_FIELDS), 2 * len(history) + 8))
        self._masks = np.empty((len(_SERIES_MASKS), self._cols.shape[1]), dtype=bool)
        self._cols_ro, self._masks_ro = _read_only(self._cols), _read_only(self._masks)
        self._first = self._end = 0
        self._prev_user = None
        self.levels = None
        for e in history:
            self._append(e, tier)

    def _append(self, e: HistoryEntry, tier: CacheTier) -> None:
        levels = agent_levels(tier, e.sample.counters)
        if e.rates is not None:
            if self._end == self._cols.shape[1]:
                self._make_room()
            row = _row(e, levels, self._prev_user)
            self._cols[:, self._end] = row
            self._masks[:, self._end] = _row_masks(row)
            self._end += 1
        self._entries.append(e)
        self._prev_user = levels.user_bytes
        self.levels = levels

    def _make_room(self) -> None:
        """Move the rows to the front of fresh columns (twice as many when
        they are already full): earlier views keep their old rows."""
        rows = self._end - self._first
        width = self._cols.shape[1]
        cols = np.empty((len(_SERIES_FIELDS), width if 2 * rows <= width else 2 * width))
        cols[:, :rows] = self._cols[:, self._first:self._end]
        masks = np.empty((len(_SERIES_MASKS), cols.shape[1]), dtype=bool)
        masks[:, :rows] = self._masks[:, self._first:self._end]
        self._cols, self._masks, self._first, self._end = cols, masks, 0, rows
        self._cols_ro, self._masks_ro = _read_only(cols), _read_only(masks)


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of a (a itself stays writable)."""
    v = a.view()
    v.flags.writeable = False
    return v


# --- numpy helpers ---------------------------------------------------------

# np.count_nonzero(a) is multiarray.count_nonzero behind the
# __array_function__ dispatch, which is three quarters of its cost on
# arrays this short: the same C function, called directly.  numpy 2 moved
# numpy.core (and warns on it): the public one there.
_nnz: Callable[[np.ndarray], int] = (
    getattr(np.core.multiarray, 'count_nonzero', np.count_nonzero)
    if np.lib.NumpyVersion(np.__version__) < '2.0.0' else np.count_nonzero)


def _any(mask: np.ndarray) -> bool:
    # count_nonzero is a third of ndarray.any()'s overhead on short arrays.
    return _nnz(mask) > 0


def _weights(gain: np.ndarray, age: np.ndarray, horizon_s: Union[float, np.ndarray]
             ) -> np.ndarray:
    """The time-weighted EWMA's weight on each interval: its length's share
    of the horizon (gain), decayed by how long ago it ended (age <= 0).
    Normalised by their sum (in _wmean) this is the EWMA once the history is
    longer than the horizon and the plain time-weighted mean before, so a
    young history is not dragged toward an arbitrary starting value."""
    w = np.divide(age, horizon_s)
    np.exp(w, out=w)    # in place: the same values without a temporary
    return np.multiply(gain, w, out=w)


def _wstats(x: np.ndarray, w: np.ndarray, total: Optional[float] = None,
            spread: bool = True) -> Tuple[Optional[float], float]:
    """Weighted mean (None without weight) and standard deviation (0.0 then,
    and when spread is False) of x, leaving out the intervals where x is
    NaN.  Most series have none: the weighted sum is then NaN-free and no
    masking is needed.  total: w.sum(), when the caller has it."""
    num = float(w.dot(x))
    if math.isnan(num):
        ok = x == x     # not NaN: one numpy call where ~np.isnan(x) is two
        x, w = x[ok], w[ok]
        num = float(w.dot(x))
        total = None
    if total is None:
        total = float(np.add.reduce(w))     # w.sum() without its Python wrapper
    if total <= 0.0:
        return None, 0.0
    mean = num / total
    if not spread:
        return mean, 0.0
    d = x - mean
    return mean, math.sqrt(float(w.dot(d * d)) / total)


def _wmean(x: np.ndarray, w: np.ndarray, total: Optional[float] = None) -> Optional[float]:
    num = float(w.dot(x))
    if num == num and total is not None:
        # _wstats' own first step, for the usual NaN-free x with a known
        # total (a weighted mean is the commonest figure in a fit).
        return None if total <= 0.0 else num / total
    return _wstats(x, w, total, spread=False)[0]


def _wstd(x: np.ndarray, w: np.ndarray, total: Optional[float] = None,
          mean: Optional[float] = None) -> float:
    """mean: _wmean(x, w, total), when the caller has it."""
    if mean is not None and total is not None:
        d = x - mean
        v = float(w.dot(d * d))
        if not math.isnan(v):   # x has no NaN, so mean and total are over all of it
            return math.sqrt(v / total)
    return _wstats(x, w, total)[1]


def _mean(x: np.ndarray) -> float:
    """x.mean() without its Python wrapper: the same pairwise sum, divided
    by the count (x not empty)."""
    return float(np.add.reduce(x)) / x.size


def _sum_squares(d: np.ndarray) -> float:
    """(d ** 2).sum(): numpy squares by d * d, and sums as add.reduce does."""
    return float(np.add.reduce(d * d))


def _r2(y: np.ndarray, fitted: np.ndarray) -> Optional[float]:
    """Against the mean; None when y does not vary (nothing to explain)."""
    ss_tot = _sum_squares(y - _mean(y))
    if ss_tot <= 0.0:
        return None
    return 1.0 - _sum_squares(y - fitted) / ss_tot


# --- inflow -----------------------------------------------------------------

@dataclass(frozen=True)
class _Runs:
    """Runs of consecutive intervals of inflow, quiet gaps shorter than
    IDLE_AFTER_S included, oldest first: per run its first and last interval
    (indices into the series, inclusive), bytes and seconds.  Arrays, not
    one object per run: a choppy history has dozens of runs."""
    first: np.ndarray
    last: np.ndarray
    bytes: np.ndarray
    seconds: np.ndarray

    def __len__(self) -> int:
        return int(self.first.size)


def _runs(s: _Series, idx: np.ndarray) -> _Runs:
    """The runs of the active intervals idx (the mask's nonzero())."""
    if idx.size == 0:
        empty = np.empty(0)
        return _Runs(empty.astype(int), empty.astype(int), empty, empty)
    start = s.start
    # Per active interval k, edge[k]: does a run start there (the first, or
    # after a long gap); edge[k + 1]: does one end there (the last, or
    # before a long gap).
    edge = np.empty(idx.size + 1, dtype=bool)
    edge[0] = edge[-1] = True
    np.greater_equal(start[idx[1:]] - s.t[idx[:-1]], IDLE_AFTER_S, out=edge[1:-1])
    firsts, lasts = idx[edge[:-1]], idx[edge[1:]]
    written = np.zeros(len(s) + 1)     # bytes written before each interval
    s.inflow_bytes.cumsum(out=written[1:])
    return _Runs(firsts, lasts, written[1:][lasts] - written[firsts],
                 s.t[lasts] - start[firsts])


def _quiet_for(s: _Series, active: np.ndarray, idx: Optional[np.ndarray] = None) -> float:
    """Seconds since the last active interval ended (0 if the latest is
    active; the whole series if none was).  idx: its indices (nonzero()),
    when the caller has it."""
    if active[-1]:
        return 0.0
    if idx is None:
        idx = active.nonzero()[0]
    since = s.t[idx[-1]] if idx.size else s.start[0]
    return float(s.t[-1] - since)


def _median(x: np.ndarray) -> float:
    """np.median's value (the middle one, or the mean of the middle two) for
    a short array without NaN, at a tenth of its overhead."""
    v = sorted(x.tolist())
    mid = len(v) // 2
    return float(v[mid]) if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def idle_threshold_bps(long_bps: float) -> float:
    return max(IDLE_FLOOR_BPS, IDLE_FRACTION_OF_LONG * long_bps)


def _base_client_bps(s: _Series, tier: CacheTier, levels: Optional[AgentLevels]) -> float:
    """Bytes/s of client IO the base serves, now and sustained: the smaller
    of the latest interval's and the short-horizon average's.  Either alone
    misleads: the average remembers a proxied burst for minutes after it,
    and a single interval is exposed to the report skew below.
    The figure is proxied reads and writes (unknown without base counters:
    0), plus, with hit sets, promotions at the cache's average object size.
    Proxied writes are the base's writes less the agent's flushes, which
    the two pools' PGs report at different moments: in an interval with
    flushes that difference can be mostly skew (a unit test builds the
    case), so such intervals count proxied reads only.
    Without hit sets a miss promotes before it is served, and a whole-object
    write of a new object (a burst) promotes nothing from the base; the
    counters cannot tell those from real copies (copy-get reads add no read
    kb), so they are left out rather than read as a busy base."""
    proxied = s.base_bytes
    latest = float(proxied[-1])
    latest = 0.0 if math.isnan(latest) else latest
    average = _wmean(proxied, s.short_w, s.short_total) or 0.0
    avg_obj = levels.avg_object_bytes if levels is not None else 0.0
    if tier.hit_set.active and avg_obj:
        promoted = s.promote * avg_obj
        latest += float(promoted[-1])
        average += _wmean(promoted, s.short_w, s.short_total) or 0.0
    return max(min(latest, average), 0.0)


def _inflow(s: _Series, tier: CacheTier, levels: Optional[AgentLevels]) -> InflowModel:
    if not len(s):
        return InflowModel(0.0, 0.0, 'idle', 0.0, None, None, 0)
    short = _wmean(s.inflow, s.short_w, s.short_total) or 0.0
    long_w = s.long_w
    long = _wmean(s.inflow, long_w, s.long_total) or 0.0
    active = s.inflow > idle_threshold_bps(long)
    idx = active.nonzero()[0]
    runs = _runs(s, idx)
    quiet_for = _quiet_for(s, active, idx)
    is_open = len(runs) > 0 and quiet_for < IDLE_AFTER_S    # the newest run goes on
    # The runs over: all but one starting with the history (it began
    # before it: its size is unknown), which can only be the oldest, and
    # the newest if it goes on.  A slice (runs are oldest first).
    done = slice(1 if len(runs) and runs.first[0] == 0 else 0,
                 len(runs) - 1 if is_open else len(runs))
    n_done = max(done.stop - done.start, 0)

    idle = not active[-1] and (short < idle_threshold_bps(long) or quiet_for >= IDLE_AFTER_S)
    burst = False
    if not idle:
        burst = short > BURST_FACTOR * long
        first = int(runs.first[-1]) if is_open else 0
        if first > 0 and runs.seconds[-1] > 0:
            # A young history's long average already holds the burst: compare
            # the run with the level before it began.
            before = _wmean(s.inflow[:first], long_w[:first]) or 0.0
            burst = burst or float(runs.bytes[-1] / runs.seconds[-1]) > BURST_FACTOR * before
    return InflowModel(
        short_bps=short, long_bps=long,
        state='idle' if idle else 'burst' if burst else 'steady',
        idle_for_s=quiet_for if idle else 0.0,
        burst_bytes=_median(runs.bytes[done]) if n_done else None,
        burst_seconds=_median(runs.seconds[done]) if n_done else None,
        bursts_seen=n_done, base_client_bps=_base_client_bps(s, tier, levels))


# --- flush ------------------------------------------------------------------

def _single_coefficient(x: np.ndarray, y: np.ndarray) -> float:
    """Least squares y ~= c * x through the origin, c >= 0."""
    return max(float(x.dot(y) / x.dot(x)), 0.0)


@dataclass(frozen=True)
class _FlushPoints:
    """The intervals with a PG in a flush mode: PGs in LOW and HIGH, flush
    bytes/s, and the normal equations of flush ~= low * n_low + high * n_high.
    PG counts are integers, so the Gram entries are exact (every product and
    partial sum is an integer below 2**53 for any pg_num and history_size
    the options allow) and det == 0 is exactly "rank below 2"."""
    n_low: np.ndarray
    n_high: np.ndarray
    y: np.ndarray
    g_ll: int        # n_low . n_low
    g_lh: int
    g_hh: int
    det: int         # g_ll * g_hh - g_lh ** 2 (Python ints: no overflow)

    @classmethod
    def of(cls, n_low: np.ndarray, n_high: np.ndarray, y: np.ndarray) -> '_FlushPoints':
        g_ll, g_lh, g_hh = (int(n_low.dot(n_low)), int(n_low.dot(n_high)),
                            int(n_high.dot(n_high)))
        return cls(n_low, n_high, y, g_ll, g_lh, g_hh, g_ll * g_hh - g_lh * g_lh)

    def sse(self, low: float, high: float) -> float:
        r = low * self.n_low + high * self.n_high - self.y
        return float(r.dot(r))


def _nonnegative_pair(p: _FlushPoints, notes: List[str]) -> Tuple[float, float]:
    """Two-column least squares (full rank) with both coefficients >= 0: the
    free fit if it is, else the better of the one-column fits with the other
    clipped to 0 (refitting the kept one, which the clipped one was
    compensating).  The free fit solves the 2x2 normal equations directly:
    np.linalg.lstsq (an SVD) gave the same to rounding at many times the cost."""
    b_l, b_h = float(p.n_low.dot(p.y)), float(p.n_high.dot(p.y))
    coef = ((p.g_hh * b_l - p.g_lh * b_h) / p.det, (p.g_ll * b_h - p.g_lh * b_l) / p.det)
    if coef[0] >= 0 and coef[1] >= 0:
        return coef
    notes.append(f'flush: the free fit gave LOW {coef[0] / MIB:.2f} and HIGH '
                 f'{coef[1] / MIB:.2f} MiB/s per PG; the negative one is set to 0')
    low = (_single_coefficient(p.n_low, p.y), 0.0)
    high = (0.0, _single_coefficient(p.n_high, p.y))
    return low if p.sse(*low) <= p.sse(*high) else high


def _flush(s: _Series, notes: List[str]) -> FlushModel:
    used = s.flushing
    points = int(_nnz(used))
    if points < FLUSH_MIN_POINTS:
        notes.append(f'flush: {_count(points, "interval")} with a PG in a flush mode, '
                     f'need {FLUSH_MIN_POINTS}')
        return FlushModel(None, None, None, points)
    p = _FlushPoints.of(s.n_low[used], s.n_high[used], s.flush[used])
    low: Optional[float]
    high: Optional[float]
    if p.det != 0:
        low, high = _nonnegative_pair(p, notes)
        if low > 0 and not (FLUSH_PRIOR_HIGH_OVER_LOW / 2 <= high / low
                            <= FLUSH_PRIOR_HIGH_OVER_LOW * 2):
            notes.append(f'flush: HIGH flushes {high / low:.1f}x LOW per PG; the agent\'s '
                         f'4 vs 2 in-flight ops per OSD suggest about '
                         f'{FLUSH_PRIOR_HIGH_OVER_LOW:.0f}x')
    elif p.g_hh == 0:
        low, high = _single_coefficient(p.n_low, p.y), None
        notes.append('flush: only LOW mode seen; one per-PG coefficient, HIGH assumed equal '
                     '(the agent allows it about twice the in-flight ops)')
    elif p.g_ll == 0:
        low, high = None, _single_coefficient(p.n_high, p.y)
        notes.append('flush: only HIGH mode seen; one per-PG coefficient, LOW assumed equal '
                     '(the agent allows it about half the in-flight ops)')
    else:
        low = high = _single_coefficient(p.n_low + p.n_high, p.y)
        notes.append('flush: LOW and HIGH PG counts moved together; one coefficient for both')
    fitted = (low or 0.0) * p.n_low + (high or 0.0) * p.n_high
    return FlushModel(low, high, _r2(p.y, fitted), points)


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
    evict = (_wmean(s.evict, s.short_w, s.short_total) or 0.0) if len(s) else 0.0
    if levels is None:
        return EvictModel(evict, 0, 0)
    budget = byte_budget(tier, levels)
    return EvictModel(evict_bps=evict,
                      clean_bytes=max(levels.user_bytes - levels.dirty_bytes, 0),
                      headroom_bytes=int(budget - levels.user_bytes) if budget else 0)


# --- hits -------------------------------------------------------------------

def _absorbed(served: np.ndarray, proxied: np.ndarray, dt: np.ndarray) -> Optional[float]:
    """Share served over a window, from sums (single intervals' proxied
    figures can be negative; the sums are exact)."""
    sv = float(served.dot(dt))
    px = max(float(proxied.dot(dt)), 0.0)
    return sv / (sv + px) if sv + px > 0 else None


def _hits(s: _Series) -> HitModel:
    if not len(s):
        return HitModel(None, None, None, None, 0, 'no samples with rates yet')
    total = s.total_ops
    known = s.px_known
    window = s.window(known)
    hit_ratio = None
    if _any(s.active[window]):
        hit_ratio = _absorbed(s.served_ops[window], s.px_ops[window], s.dt[window])
    has_fill = s.has_fill
    used = s.hit_points
    points = int(_nnz(used))
    too_thin: Optional[str] = None
    if not _any(has_fill):
        too_thin = 'no target_max_bytes/objects: fill is unknown'
    elif not _any(known):
        too_thin = 'no base pool counters: proxied IO is unknown'
    elif points < HIT_MIN_POINTS:
        too_thin = f'{_count(points, "point")}, need {HIT_MIN_POINTS}'
    else:
        fill = s.fill[used]
        # fill.max() - fill.min(), without their Python wrappers.
        span = float(np.maximum.reduce(fill) - np.minimum.reduce(fill))
        if span < HIT_MIN_FILL_SPAN:
            too_thin = f'fill varied only {span:.3f}, need {HIT_MIN_FILL_SPAN}'
    if too_thin is not None:
        return HitModel(hit_ratio, None, None, None, points, too_thin)
    share = s.served_ops[used] / total[used]
    slope, intercept = _line(fill, share)
    r2 = _r2(share, intercept + slope * fill)
    return HitModel(hit_ratio, intercept, slope, r2, points, None)


def _line(x: np.ndarray, y: np.ndarray) -> Tuple[float, float]:
    """Least squares y ~= intercept + slope * x: (slope, intercept), as
    np.polyfit(x, y, 1) gives them (to rounding) in a tenth of its time.
    Centred sums keep it exact enough; x varies (the caller checks)."""
    xm, ym = _mean(x), _mean(y)
    dx = x - xm
    slope = float(dx.dot(y - ym) / dx.dot(dx))
    return slope, ym - slope * xm


# --- promote gate -----------------------------------------------------------

def _pct(x: float) -> str:
    return f'{100 * x:.0f}%'


def _gate(throttle_ops: float, limiter: str, detail: str,
          recommend: Optional[Dict[str, Any]] = None, write: Optional[float] = None,
          read: Optional[float] = None, promote: float = 0.0) -> PromoteGate:
    # Module level, not a closure in _promote: a nested def evaluates its
    # typing annotations on every call.
    return PromoteGate(write, read, promote, throttle_ops, limiter, detail, recommend or {})


def _promote(s: _Series, tier: CacheTier, limits: PromoteLimits,
             levels: Optional[AgentLevels]) -> PromoteGate:
    throttle_ops = limits.max_objects_sec_per_osd * limits.osds
    throttle_bytes = limits.max_bytes_sec_per_osd * limits.osds
    gate = partial(_gate, throttle_ops)

    if not len(s):
        return gate('unknown', 'no samples with rates yet')
    promote_now = _wmean(s.promote, s.short_w, s.short_total) or 0.0
    window = s.window(s.px_write_known)
    dt = s.dt[window]
    if not dt.size:
        return gate('unknown', 'no base pool counters: proxied IO is unknown',
                    promote=promote_now)
    write = _absorbed(s.write_bytes[window], s.px_write_bytes[window], dt)
    read = _absorbed(s.read_bytes[window], s.px_read_bytes[window], dt)
    active = s.active[window]
    n_active = int(_nnz(active))
    span = f'the last {float(s.t[-1] - np.minimum.reduce(s.start[window])):.0f} s'
    if n_active < GATE_MIN_ACTIVE:
        return gate('unknown', f'{_count(n_active, "interval")} with client IO in {span}, '
                    f'need {GATE_MIN_ACTIVE}', write=write, read=read, promote=promote_now)

    absorbed = ' and '.join(f'{_pct(x)} of {kind} bytes'
                            for x, kind in ((write, 'write'), (read, 'read')) if x is not None)
    shares = f'the cache absorbed {absorbed or "no client bytes"} over {span}'
    write_px = 1.0 - write if write is not None else 0.0
    read_px = 1.0 - read if read is not None else 0.0
    if max(write_px, read_px) < MEANINGFUL_PROXIED_SHARE:
        return gate('none', f'{shares}: almost nothing is proxied to the base',
                    write=write, read=read, promote=promote_now)

    busy = dt[active]
    busy_s = float(np.add.reduce(busy))
    promote_busy = float(s.promote[window][active].dot(busy)) / busy_s
    proxied_busy = max(float(s.px_ops[window].dot(dt)), 0.0) / busy_s
    avg_obj = levels.avg_object_bytes if levels is not None else 0.0
    load = max(promote_busy / throttle_ops if throttle_ops > 0 else 0.0,
               promote_busy * avg_obj / throttle_bytes if throttle_bytes > 0 else 0.0)
    promotes = (f'promotes ran at {promote_busy:.1f}/s while busy, {100 * load:.0f}% of '
                f'the throttle ({throttle_ops:.0f} objects/s, '
                f'{throttle_bytes / MIB:.0f} MiB/s over {_count(limits.osds, "OSD")})')
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
    w = s.short_w
    # Idle means no inflow now, whatever the short average still remembers
    # of the last burst (it keeps 70% of it 20 s on).
    now_bps = 0.0 if inflow.state == 'idle' else inflow.short_bps
    net = now_bps - _current_flush_bps(history, flush)
    # (The spreads only matter for a positive rate: _time_to is None otherwise.)
    # inflow.short_bps is _wmean(s.inflow, w, total) whenever there is weight.
    mean = inflow.short_bps if s.short_total > 0.0 else None
    to_dirty_high = _time_to(tier.ratios.dirty_high * budget - history[-1].dirty_bytes,
                             net, _wstd(s.inflow, w, s.short_total, mean) if net > 0 else 0.0)
    # Likewise the fill stops growing when promotions and writes stop.
    growing = s.growing
    to_full = None
    if _quiet_for(s, growing) < IDLE_AFTER_S:
        growth, spread = _wstats(s.growth, w, s.short_total)
        if growth is not None:
            to_full = _time_to(budget - levels.user_bytes, growth, spread)
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
        limits: PromoteLimits = DEFAULT_LIMITS,
        cache: Optional[SeriesCache] = None) -> PoolModel:
    """The pool's model from its history (oldest first).  Never raises on a
    short or empty history: what cannot be estimated is None, and fitted
    says whether the whole is worth acting on.  With a cache (one per pool,
    given the same pool's history every call) the arrays are kept across
    calls instead of rebuilt; the model is the same."""
    return fit_pools([FitJob(history, tier, limits, cache)])[0]


class FitJob(NamedTuple):
    """One pool's fit() arguments, for fit_pools."""
    history: Sequence[HistoryEntry]
    tier: CacheTier
    limits: PromoteLimits = DEFAULT_LIMITS
    cache: Optional[SeriesCache] = None


def fit_pools(jobs: Sequence[FitJob]) -> List[PoolModel]:
    """fit() for several pools: one estimate at a time for all of them,
    rather than one pool at a time, so that each estimate's code (ours and
    numpy's) runs for every pool while the CPU still holds it in its caches
    (at 64 cache pools a tick took about a tenth less CPU).  Each model is
    exactly what fit() gives that pool alone: no estimate of one pool reads
    another's, and a pool's SeriesCache views stay valid until its next fit."""
    return [dataclasses.replace(model, promote=gate())
            for model, gate in fit_pools_deferred(jobs)]


# The promote gate in a model from fit_pools_deferred: computed later, on
# demand (DeferredGate).
PROMOTE_PENDING = PromoteGate(None, None, 0.0, 0.0, 'pending', 'not computed yet', {})


class DeferredGate:
    """A pool's promote gate, computed when asked for.  The controller and
    the health checks never read the gate; status and eval do, on an
    operator's command rather than every tick, and it was a tenth of a
    tick's CPU.  It gives what fit() gives, whenever asked: it holds the
    fit's arrays, whose rows the pool's later SeriesCache updates leave
    as they are but for growth, which the gate does not read (see
    SeriesCache)."""

    def __init__(self, s: _Series, tier: CacheTier, limits: PromoteLimits,
                 levels: Optional[AgentLevels]) -> None:
        self._s, self._tier, self._limits, self._levels = s, tier, limits, levels

    def __call__(self) -> PromoteGate:
        return _promote(self._s, self._tier, self._limits, self._levels)


def fit_pools_deferred(jobs: Sequence[FitJob]) -> List[Tuple[PoolModel, DeferredGate]]:
    """fit_pools, each model with PROMOTE_PENDING for its promote gate and
    the gate to compute when it is wanted (see DeferredGate)."""
    return [(f.model(), DeferredGate(f.s, f.job.tier, f.job.limits, f.levels))
            for f in _fit_steps(jobs)]


def _fit_steps(jobs: Sequence[FitJob]) -> List['_PoolFit']:
    """fit_pools' steps, all but the promote gate."""
    for job in jobs:    # every pool's new rows, then every pool's arrays
        if job.cache is not None:
            job.cache.update(job.history, job.tier)
    fits = [_PoolFit(job) for job in jobs]
    for f in fits:
        f.inflow = _inflow(f.s, f.job.tier, f.levels)
    for f in fits:
        f.flush = _flush(f.s, f.notes)
    for f in fits:
        f.evict = _evict(f.s, f.job.tier, f.levels)
    for f in fits:
        f.hits = _hits(f.s)
    for f in fits:
        f.predictions = _predictions(f.s, f.job.history, f.job.tier, f.levels, f.inflow,
                                     f.flush)
    return fits


class _PoolFit:
    """One pool's fit in progress (fit_pools): its arrays, then each
    estimate as its step runs for every pool."""
    inflow: InflowModel
    flush: FlushModel
    evict: EvictModel
    hits: HitModel
    predictions: Predictions

    def __init__(self, job: FitJob) -> None:
        self.job = job
        history, tier = job.history, job.tier
        self.s: _Series
        self.levels: Optional[AgentLevels]
        if job.cache is not None:     # updated to this history by fit_pools
            self.s = job.cache.view()
            self.levels = job.cache.levels if history else None
        else:
            self.s = _series(history, tier)
            self.levels = agent_levels(tier, history[-1].sample.counters) if history else None
        self.notes: List[str] = []

    def model(self) -> PoolModel:
        """The pool's model, its promote gate PROMOTE_PENDING."""
        history, s = self.job.history, self.s
        window_s = float(history[-1].sample.mono - history[0].sample.mono) if history else 0.0
        why_not = _why_not(self.job.tier, len(s), window_s)
        return PoolModel(
            fitted=why_not is None, why_not=why_not, samples=len(s), window_s=window_s,
            inflow=self.inflow, flush=self.flush, evict=self.evict, hits=self.hits,
            promote=PROMOTE_PENDING, predictions=self.predictions, notes=tuple(self.notes))
