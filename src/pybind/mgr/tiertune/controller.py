"""The control law: samples' model + operator bounds in, a decision out.

Pure and deterministic: no mgr imports, no clock, no randomness.  The same
input always gives the same Decision.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence

from .bounds import Bounds, Knobs
from .models import PoolModel
from .topology import Ratios


@dataclass(frozen=True)
class ControllerInput:
    now_s: float                     # monotonic seconds (the module's clock)
    ratios: Ratios                   # the pool's current ratios (OSD map)
    fill: Optional[float]            # pool-level fill, fraction of target (agent arithmetic)
    dirty: Optional[float]           # pool-level dirty, fraction of target
    hit_set_period_s: int
    model: PoolModel
    bounds: Bounds
    knobs: Knobs
    last_change_s: Optional[float]   # when tiertune last changed this pool (same clock)
    # Reasons the module already knows the controller must hold (stale
    # stats, degraded/misplaced/unfound objects, the notieragent flag, no
    # target_max_*); each a short sentence.
    hold_reasons: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class Decision:
    action: str                      # 'change' | 'hold' | 'none'
    current: Ratios
    recommended: Ratios              # where the law wants the ratios (within bounds, ordered)
    next: Ratios                     # what to set now: a bounded step toward recommended
                                     # (== current unless action == 'change')
    reasons: Sequence[str]           # why, one short sentence each, most important first
    bounds_block: Optional[str] = None  # the model wants a change the bounds forbid
    numbers: Dict[str, Any] = field(default_factory=dict)  # the figures behind it, for eval

    def as_dict(self) -> Dict[str, Any]:
        raise NotImplementedError


def decide(inp: ControllerInput) -> Decision:
    raise NotImplementedError
