"""The evict estimate: the smoothed evict rate, the clean bytes eviction
can free, and the headroom under the byte budget (byte_budget: the user
bytes at 100% of target, which the predictions use as well)."""

from dataclasses import dataclass
from typing import List, Optional

from .sampling import AgentLevels
from .series import _Series, _wmean
from .topology import CacheTier


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class EvictModel:
    evict_bps: float                 # smoothed evict bytes/s
    clean_bytes: int                 # user bytes not dirty now (what eviction can free)
    headroom_bytes: int              # target_max_bytes - user bytes (negative when over)


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
