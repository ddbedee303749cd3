"""What the operator allows: per-pool bounds on the three ratios, and knobs.

Pure data and validation; the module persists them, the controller obeys them.
"""

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

# The OSD agent's hysteresis (osd_agent_slop): a ratio change smaller than
# this moves no PG between modes, so the deadband must be wider.
OSD_AGENT_SLOP = 0.02
# The highest a bound may allow.  A PG in an idle mode starts flushing (or
# evicting) only past its ratio plus the slop (ratio x 1.02), and at 100%
# of its share it is FULL and blocks writes: at or above 1 / 1.02 = 0.9804
# it would go straight from idle to FULL however small its objects.  A
# ceiling, not a guarantee: a PG's level moves an object at a time, and
# with few objects to a PG's share one object can still take it from
# under its ratio to FULL at 0.95 as at 0.98.
RATIO_MAX = 0.98


@dataclass(frozen=True)
class Bounds:
    """Inclusive ranges each ratio may take.  Defaults straddle Ceph's
    0.4/0.6/0.8 and a common hand-tuned 0.3/0.4/0.7."""
    dirty_ratio_min: float = 0.1
    dirty_ratio_max: float = 0.6
    dirty_high_ratio_min: float = 0.3
    dirty_high_ratio_max: float = 0.8
    full_ratio_min: float = 0.6
    full_ratio_max: float = 0.9

    def ranges(self) -> Tuple[Tuple[float, float], Tuple[float, float], Tuple[float, float]]:
        return ((self.dirty_ratio_min, self.dirty_ratio_max),
                (self.dirty_high_ratio_min, self.dirty_high_ratio_max),
                (self.full_ratio_min, self.full_ratio_max))

    def problem(self) -> Optional[str]:
        """Why these bounds are unusable, or None.  Usable means: each range
        inside 0..RATIO_MAX and not inverted, and some dirty <= dirty_high
        <= full exists inside them (each ratio's minimum may not exceed a
        later ratio's maximum)."""
        if (0.0 <= self.dirty_ratio_min <= self.dirty_ratio_max <= RATIO_MAX
                and 0.0 <= self.dirty_high_ratio_min <= self.dirty_high_ratio_max <= RATIO_MAX
                and 0.0 <= self.full_ratio_min <= self.full_ratio_max <= RATIO_MAX
                and self.dirty_ratio_min <= self.dirty_high_ratio_max
                and self.dirty_high_ratio_min <= self.full_ratio_max
                and self.dirty_ratio_min <= self.full_ratio_max):
            return None     # every check below passes (the controller asks every tick)
        names = ('dirty_ratio', 'dirty_high_ratio', 'full_ratio')
        for name, (lo, hi) in zip(names, self.ranges()):
            for which, v in (('min', lo), ('max', hi)):
                if not 0.0 <= v <= 1.0:
                    return f'{name}_{which} {v} is outside 0..1'
                if v > RATIO_MAX:
                    return (f'{name}_{which} {v} is above {RATIO_MAX}: with the agent\'s '
                            f'slop ({OSD_AGENT_SLOP:.0%}) a PG would go from idle straight '
                            f'to FULL, where writes block')
            if lo > hi:
                return f'{name}_min {lo} is above {name}_max {hi}'
        if self.dirty_ratio_min > self.dirty_high_ratio_max:
            return (f'dirty_ratio_min {self.dirty_ratio_min} is above dirty_high_ratio_max '
                    f'{self.dirty_high_ratio_max}: dirty <= dirty_high is impossible')
        if self.dirty_high_ratio_min > self.full_ratio_max:
            return (f'dirty_high_ratio_min {self.dirty_high_ratio_min} is above full_ratio_max '
                    f'{self.full_ratio_max}: dirty_high <= full is impossible')
        if self.dirty_ratio_min > self.full_ratio_max:
            return (f'dirty_ratio_min {self.dirty_ratio_min} is above full_ratio_max '
                    f'{self.full_ratio_max}: dirty <= full is impossible')
        return None


@dataclass(frozen=True)
class Knobs:
    """How the controller moves, per pool."""
    # Predicted time until the cache reaches 100% of its target (where the
    # OSD blocks writes) below which dirty_high is lowered to flush hard;
    # also the window of inflow the full ratio keeps evictable room for.
    horizon_s: float = 600.0
    # At most one change per pool per interval.  The effective interval is
    # never shorter than the pool's hit_set_period: every `osd pool set` on a
    # cache pool resets each PG's in-memory hit set.
    min_interval_s: float = 600.0
    # Largest move of any one ratio in one change.
    max_step: float = 0.1
    # Changes smaller than this are not made (wider than OSD_AGENT_SLOP).
    deadband: float = 0.05

    def problem(self) -> Optional[str]:
        # Field by field, not dataclasses.asdict (a deep copy): the
        # controller asks every tick for every pool.  First all the checks
        # below at once (the bounds of each are finite, and a NaN fails them).
        if (0.0 < self.horizon_s < math.inf and 0.0 <= self.min_interval_s < math.inf
                and 0.0 < self.max_step <= 1.0 and OSD_AGENT_SLOP < self.deadband < 1.0
                and self.deadband <= self.max_step):
            return None
        for name in KNOB_KEYS:
            v = getattr(self, name)
            if not math.isfinite(v):
                return f'{name} {v} must be a finite number'
        if self.horizon_s <= 0:
            return f'horizon_s {self.horizon_s} must be positive'
        if self.min_interval_s < 0:
            return f'min_interval_s {self.min_interval_s} must not be negative'
        if not 0.0 < self.max_step <= 1.0:
            return f'max_step {self.max_step} must be in (0, 1]'
        if not OSD_AGENT_SLOP < self.deadband < 1.0:
            return (f'deadband {self.deadband} must be wider than osd_agent_slop '
                    f'({OSD_AGENT_SLOP}) and below 1')
        if self.deadband > self.max_step:
            return f'deadband {self.deadband} is above max_step {self.max_step}: no change fits'
        return None


BOUND_KEYS = tuple(f.name for f in dataclasses.fields(Bounds))
KNOB_KEYS = tuple(f.name for f in dataclasses.fields(Knobs))


def with_setting(bounds: Bounds, knobs: Knobs, key: str,
                 value: float) -> Tuple[Bounds, Knobs, Optional[str]]:
    """(bounds, knobs) with key set to value, and the reason it is refused
    (unknown key, or a result that fails validation) or None.  Nothing is
    changed when refused: the caller keeps its old pair."""
    if key in BOUND_KEYS:
        nb = dataclasses.replace(bounds, **{key: float(value)})
        return nb, knobs, nb.problem()
    if key in KNOB_KEYS:
        nk = dataclasses.replace(knobs, **{key: float(value)})
        return bounds, nk, nk.problem()
    return bounds, knobs, (f"unknown key '{key}' (one of: "
                           f"{', '.join(BOUND_KEYS + KNOB_KEYS)})")


def as_typed(value: float) -> float:
    """The decimal the operator typed.  The mgr parses a command's JSON
    with json_spirit, whose reals can be a unit in the last place off: on
    16.2.15 `tiertune set <pool> full_ratio_min 0.6` arrived as
    0.6000000000000001 (0.3 as 0.30000000000000004), and status and the
    stored settings showed that.  Fifteen significant digits give back
    any decimal typed with fifteen or fewer."""
    v = float(value)
    typed = float(f'{v:.15g}') if math.isfinite(v) else v
    # The largest floats round up past the largest there is.  + 0.0: a
    # typed -0 is 0 (`set ... -0.0` echoed and stored "-0.0").
    return (typed if math.isfinite(typed) else v) + 0.0


def bounds_from_dict(d: Mapping[str, Any]) -> Bounds:
    # as_typed: values an earlier version stored as the mgr parsed them.
    return Bounds(**{k: as_typed(v) for k, v in d.items() if k in BOUND_KEYS})


def knobs_from_dict(d: Mapping[str, Any]) -> Knobs:
    return Knobs(**{k: as_typed(v) for k, v in d.items() if k in KNOB_KEYS})


def unusable_fields(obj: Any) -> List[Tuple[str, float]]:
    """The fields of a Bounds or Knobs that no `set` accepts whatever the
    others are: not finite, or (a bound) outside 0..1.  A stored value
    like that is corruption (`config-key set` by hand), not a setting."""
    bounds = isinstance(obj, Bounds)
    return [(k, v) for k, v in as_dict(obj).items()
            if not math.isfinite(v) or (bounds and not 0.0 <= v <= 1.0)]


def as_dict(obj: Any) -> Dict[str, float]:
    return dict(dataclasses.asdict(obj))
