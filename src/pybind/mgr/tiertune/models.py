"""Fitted per-pool estimates of promote, flush and evict pressure.

Pure: a pool's sample history in, a PoolModel out.  numpy only (scipy's
optimize/stats/interpolate/signal hang ceph-mgr's sub-interpreters).  Called
once per tick per cache pool, so it must stay cheap: O(history) with small
constants, no per-PG work.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence

from .rates import HistoryEntry
from .topology import CacheTier


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
        raise NotImplementedError


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
        raise NotImplementedError


def fit(history: Sequence[HistoryEntry], tier: CacheTier,
        limits: PromoteLimits = PromoteLimits()) -> PoolModel:
    raise NotImplementedError
