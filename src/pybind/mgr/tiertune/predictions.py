"""The predictions: seconds until dirty reaches dirty_high and until the
cache is full, from the inflow, flush and evict estimates, with a band."""

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .evict import byte_budget
from .flush import FlushModel
from .inflow import IDLE_AFTER_S, InflowModel, _quiet_for
from .rates import HistoryEntry
from .sampling import AgentLevels
from .series import _Series, _wstats, _wstd
from .topology import CacheTier

# --- predictions -----------------------------------------------------------
# Band half-width in standard deviations of recent inflow: the typical
# spread, not a worst case (the controller keeps its own margin, horizon_s).
BAND_SIGMAS = 1.0


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class Band:
    """An estimate with an uncertainty band (low <= value <= high)."""
    value: float
    low: float
    high: float


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class Predictions:
    """Seconds until dirty reaches dirty_high (pool level) and until the
    cache reaches 100% of its target (where the OSD blocks writes), under
    the current inflow; None when not approaching (net inflow <= 0)."""
    time_to_dirty_high_s: Optional[Band]
    time_to_full_s: Optional[Band]


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
