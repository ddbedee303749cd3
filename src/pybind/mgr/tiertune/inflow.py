"""The inflow estimate: bytes/s becoming dirty in the cache, smoothed over
two horizons, and whether the pool is idle, steady or in a burst (with the
typical burst's size and length), plus the client bytes/s the base serves.
"""

import math
from dataclasses import dataclass
from typing import Optional

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .sampling import AgentLevels
from .series import IDLE_FLOOR_BPS, _Series, _wmean
from .topology import CacheTier

# --- inflow ----------------------------------------------------------------
# A pool whose usual inflow is large is idle at a small fraction of it (and
# at IDLE_FLOOR_BPS whatever its history): what is left is a trickle the
# agent absorbs without changing mode.
IDLE_FRACTION_OF_LONG = 0.05
# Quiet this long ends a burst.  OSDs report PG stats every 5 s
# (mgr_stats_period) out of step with the tick, so a single interval can
# show no writes in the middle of a burst (the recorded overwrite burst
# does); four reports in a row cannot.  Shorter than SHORT_HORIZON_S, so
# the end of a burst is seen before the short average has decayed.
IDLE_AFTER_S = 20.0
# Inflow this many times the usual level is a burst, not a new steady state.
BURST_FACTOR = 2.0


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
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
    # The run of writes in progress: its mean bytes/s since it began (None
    # when no run goes on).  The short average decays within a long run
    # whose writes the cache has started to throttle; this does not.
    run_bps: Optional[float] = None


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
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
        bursts_seen=n_done, base_client_bps=_base_client_bps(s, tier, levels),
        run_bps=(float(runs.bytes[-1] / runs.seconds[-1])
                 if is_open and not idle and runs.seconds[-1] > 0 else None))
