"""A pool's sample history as arrays, and the numpy helpers the estimates share.

One _Series row per history entry with rates (built whole by _series, or
kept across ticks by SeriesCache), with the per-interval figures and masks
that several estimates read, and the weights of the two smoothing horizons.
The estimates (inflow, flush, evict, hits, promote, predictions) read these
arrays; models.fit puts them together.
"""

import dataclasses
import math
from collections import deque
from dataclasses import InitVar, dataclass, field
from typing import Callable, Deque, List, Optional, Sequence, Tuple, Union

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

# --- what the masks count -------------------------------------------------
# Two thresholds that define masks of the series, so kept here with it:
# growing (IDLE_FLOOR_BPS, also the floor of inflow's idle threshold) and
# active (HIT_MIN_OPS_SEC).
# Below this the pool is idle whatever its history: 256 KiB/s fills a
# 1 GiB cache's dirty_ratio share in over half an hour.
IDLE_FLOOR_BPS = 256 * 1024
# Intervals with fewer client ops/s than this give a share that is mostly
# reporting noise; they count as no client IO.
HIT_MIN_OPS_SEC = 1.0


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
    inflow_bytes: np.ndarray  # inflow * dt: the bytes that became dirty (for inflow._runs)
    base_bytes: np.ndarray   # proxied bytes/s inflow._base_client_bps counts
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
        # The figures depend on t and the gains alone, and the pools a tick
        # fits were sampled at the same moments: most share them with the
        # pool fitted before (see _Timing).
        key = self.t.tobytes() + gains.tobytes()
        timing = _last_timing
        if timing is None or timing.key != key:
            timing = _timing(key, self.t, gains)
        self.short_w, self.long_w = timing.weights
        self.short_total, self.long_total = timing.totals
        self.recent = timing.recent

    def __len__(self) -> int:
        return int(self.t.size)

    def window(self, known: np.ndarray) -> Union[slice, np.ndarray]:
        """Index of the recent intervals where known: the recent slice when
        every interval is known (the usual case: a view, cheaper than a mask)."""
        if _nnz(known) == known.size:
            return self.recent
        return known & (self.t >= self.t[-1] - RECENT_WINDOW_S)


@dataclass(frozen=True)
class _Timing:
    """A _Series' figures that depend only on its times and gains: the
    weights (read-only: pools share them), their sums, the recent slice."""
    key: bytes           # the t and gains rows' bytes
    weights: Tuple[np.ndarray, np.ndarray]   # short, long
    totals: Tuple[float, float]
    recent: slice


def _timing(key: bytes, t: np.ndarray, gains: np.ndarray) -> _Timing:
    global _last_timing
    newest = t[-1] if t.size else 0.0
    # _weights for both horizons at once; elementwise, so each row is bit
    # for bit what _weights gives it alone (and each row's sum what the
    # row's own sum() gives: the same pairwise summation).
    w = _weights(gains, t - newest, _HORIZONS)
    w.flags.writeable = False
    short_total, long_total = np.add.reduce(w, axis=1).tolist()
    timing = _Timing(key, (w[0], w[1]), (short_total, long_total),
                     slice(int(t.searchsorted(newest - RECENT_WINDOW_S)), None))
    # One entry, replaced whole: a fit in another thread (a command's)
    # reads either the old one or this, and checks its key either way.
    _last_timing = timing
    return timing


_last_timing: Optional[_Timing] = None


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
    first (models.DeferredGate relies on this).  It follows the history by
    entry identity, as a PoolHistory changes: entries appended at the end,
    dropped from the start.  When the history is not such a continuation of
    the one it mirrors (its newest entry missing, the first entry not where
    it should be) or the tier changed (fill depends on it), it rebuilds: the
    rows equal _series()'s."""

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
