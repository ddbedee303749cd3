"""The control law: samples' model + operator bounds in, a decision out.

Pure and deterministic: no mgr imports, no clock, no randomness.  The same
input always gives the same Decision.

The law, per cache pool (all ratios are fractions of the pool's target, as
the OSD agent computes them; T = the target in bytes):

  dirty       writes idle -> dirty_ratio_min (the idle base drains dirty data
              ahead of the next burst), unless clients keep the base busy
              (proxied IO and promotions above the idle threshold: keep,
              draining would compete with them); a burst that fits
              (dirty + burst/T <= dirty_high - 0.05) -> dirty_ratio_max (do
              not flush against it); a burst that does not fit ->
              dirty_ratio_min (flush early); steady, or a burst while the
              cache is about to fill -> keep.
  dirty_high  while write surges overrun the cache (see full), idle or
              not -> dirty_ratio_min + 0.3 (OVERRUN_LOW_LANDING), or its
              floor if higher: a surge meeting a drained cache lands 0.3
              of the target with LOW flushing (more clean objects evicted
              per flush: room opens fast), then its PGs flush HIGH, which
              evicts fewer, so clean data lasts into the FULL spells.
              Otherwise keep; but when the cache is predicted full (writes
              block) within the horizon (low band) and clean + free space
              cannot take the reserve below, lower it to dirty - 0.04 so the
              PGs flush HIGH (twice the in-flight flush ops of LOW); once
              writes are idle, raise it back to mid-range if it is lower.
  full        a write surge (the typical burst, or for 60 s the inflow or,
              if higher, the mean rate of the write run in progress) must
              fit above it: at most 1 - surge/T.  A surge more than
              1 - dirty_ratio_min of T overruns the cache whatever full
              is: full then stays where it is (raised, PGs run closer to
              FULL and the median write grows; lowered, it evicts early
              what the surge evicts anyway).  A read cache (no write
              surge remembered, dirty under 0.01 of T) -> as high as
              allowed: the room serves only writes.  Otherwise, within
              the ceiling,
              as high as allowed when hits grow with occupancy, mid-range
              when they do not (a curve with r2 >= 0.3); with no curve
              unchanged (lowered if room needs it, back up to mid-range
              once writes are idle).

  Then: clamp into the bounds, round to hundredths, order (dirty <=
  dirty_high <= full, dirty's value first); while OSDs of the pool's rule
  are nearfull or worse, no ratio above where it is (no_raise); step from current toward that
  by at most max_step per ratio, skipping moves under the deadband; at most
  one change per max(min_interval_s, hit_set_period), because every
  `osd pool set` resets the PGs' in-memory hit sets (the tuner passes 0 for
  a pool without hit sets: none to lose).  When the bounds stop
  the law by more than the deadband, bounds_block says which bound.

Out-of-bounds or misordered current ratios (set by hand) are not a reason to
hold: the law starts from them clamped into the bounds, and the step walks
toward that point.  Each ratio moves at most max_step per decision, with one
exception: when current is misordered, the step must still give an ordered
point, and a ratio may then move further than max_step (never past
recommended).  Ratios outside their range, or in a misordered pair, move
even when the move is under the deadband.

The code is split by what flows through it: stepping.py (ratios as the mon
stores them, ordering within the bounds, the bounded step), law.py (the law
proper: model and bounds in, recommended ratios and why out), reasons.py
(the why put into words).  This module has decide (the rate limit and the
decision) and re-exports (the `import x as x` lines) what the tuner, the
commands and the tests import from here.
"""

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .law import BURST_FIT_MARGIN as BURST_FIT_MARGIN
from .law import FULL_NO_PAYOFF_POSITION as FULL_NO_PAYOFF_POSITION
from .law import HIGH_ENGAGE_MARGIN as HIGH_ENGAGE_MARGIN
from .law import HIT_CURVE_MIN_R2 as HIT_CURVE_MIN_R2
from .law import OVERRUN_LOW_LANDING as OVERRUN_LOW_LANDING
from .law import RECOMMEND_GRID as RECOMMEND_GRID
from .law import RELAX_POSITION as RELAX_POSITION
from .law import TARGET_FROM_FRACTION_MIN as TARGET_FROM_FRACTION_MIN
from .law import TYPICAL_BURST_S as TYPICAL_BURST_S
from .law import ControllerInput, _law
from .reasons import LABELS as LABELS
from .reasons import _invalid_note, _Reasons, _reasons
from .stepping import NAMES as NAMES
from .stepping import RATIO_EPS as RATIO_EPS
from .stepping import Ranges as Ranges
from .stepping import Triple as Triple
from .stepping import _clamp as _clamp
from .stepping import _eq_micro as _eq_micro
from .stepping import _exempt, nearest_valid, out_of_bounds, same, step
from .stepping import _f as _f
from .stepping import _micro as _micro
from .stepping import order_within as order_within
from .stepping import to_mon_grid as to_mon_grid
from .topology import Ratios

ACTIONS = ('change', 'hold', 'none')


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class Decision:
    action: str                      # 'change' | 'hold' | 'none'
    current: Ratios
    recommended: Ratios              # where the law wants the ratios (within bounds, ordered)
    next: Ratios                     # what to set now: a bounded step toward recommended
                                     # (== current unless action == 'change')
    reasons: Sequence[str]           # why, one short sentence each, most important first
                                     # (worded when first read: see reasons._Reasons)
    bounds_block: Optional[str] = None  # the model wants a change the bounds forbid
    numbers: Dict[str, Any] = field(default_factory=dict)  # the figures behind it, for eval

    def as_dict(self) -> Dict[str, Any]:
        return {
            'action': self.action,
            'current': self.current.as_dict(),
            'recommended': self.recommended.as_dict(),
            'next': self.next.as_dict(),
            'reasons': [str(r) for r in self.reasons],
            'bounds_block': self.bounds_block,
            'numbers': _json_ready(self.numbers),
        }


def _json_ready(v: Any) -> Any:
    """Plain JSON values: non-finite floats become None (json.dumps would
    write NaN, which is not JSON), tuples become lists."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _json_ready(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_ready(x) for x in v]
    return v


def _rate_limit(inp: ControllerInput) -> Tuple[float, Optional[float], Optional[float]]:
    """(effective interval, seconds since the last change, seconds left)."""
    interval = max(float(inp.knobs.min_interval_s), float(inp.hit_set_period_s))
    if inp.last_change_s is None:
        return interval, None, None
    since = float(inp.now_s) - float(inp.last_change_s)
    if not math.isfinite(since):
        return interval, None, interval     # unknown: wait a full interval
    return interval, since, max(interval - since, 0.0)


def _not_raised(current: Ratios, recommended: Ratios, why: Optional[str]
                ) -> Optional[Tuple[Ratios, List[str]]]:
    """With why (a reason no ratio may go up): recommended with no ratio
    above current (still ordered: the smaller of two ordered triples is),
    and a sentence naming those held down; None when nothing is."""
    if why is None:
        return None
    held = [n for n in NAMES if getattr(recommended, n) > getattr(current, n) + RATIO_EPS]
    if not held:
        return None
    capped = Ratios(*(min(getattr(recommended, n), getattr(current, n)) for n in NAMES))
    moves = ', '.join(f'{LABELS[n]} {_f(getattr(current, n))} -> '
                      f'{_f(getattr(recommended, n))}' for n in held)
    return capped, [f'{why}: no ratio is raised (the law would raise {moves})']


def decide(inp: ControllerInput) -> Decision:
    current = inp.ratios
    knob_problem = inp.knobs.problem()
    bound_problem = inp.bounds.problem()
    if bound_problem is not None or knob_problem is not None:
        # The module validates both before storing them; hold rather than
        # guess if something slipped through.
        unusable = [f'unusable {what}: {p}' for what, p in (('bounds', bound_problem),
                                                              ('knobs', knob_problem)) if p]
        return Decision(action='hold', current=current, recommended=current, next=current,
                        reasons=tuple(unusable))

    invalid = out_of_bounds(current, inp.bounds)
    interval, since, remaining = _rate_limit(inp)
    numbers: Dict[str, Any] = {'current_valid': not invalid,
                               'effective_interval_s': interval,
                               'since_last_change_s': since,
                               'rate_limit_remaining_s': remaining}

    fitted = inp.model.fitted
    law = _law(inp) if fitted else None
    if law is not None:
        numbers.update(law.numbers)
        recommended = law.recommended
    else:
        recommended = nearest_valid(current, inp.bounds)
    capped = _not_raised(current, recommended, inp.no_raise)

    holds = [str(r) for r in inp.hold_reasons]
    if not fitted:
        holds.append(f'model not fitted: {inp.model.why_not or "no reason given"}')
    if holds:
        # Say where it would go, do not move.
        if capped is not None:
            recommended, holds = capped[0], holds + capped[1]
        reasons = _Reasons(partial(_reasons, holds + _invalid_note(invalid, current, recommended,
                                                                   'would move'),
                                   current, recommended, current, law, 'holding', inp))
        # The bounds still forbid what the law wants while the pool holds
        # (a recovery, stale stats): TIERTUNE_BOUNDS_BLOCK must not clear
        # for the hold and come back after it.
        return Decision(action='hold', current=current, recommended=recommended,
                        next=current, reasons=reasons, numbers=numbers,
                        bounds_block=('; '.join(law.blocks)
                                      if law and law.blocks and inp.blocks_matter else None))

    assert law is not None
    lead: List[str] = []
    if capped is not None:
        recommended, lead = capped
    nxt = step(current, recommended, inp.knobs, _exempt(current, inp.bounds))
    bounds_block = '; '.join(law.blocks) if law.blocks else None
    lead += _invalid_note(invalid, current, recommended, 'moving')
    if same(nxt, current):
        reasons = _Reasons(partial(_reasons, lead, current, recommended, current, law, None, inp,
                                   where_if_nothing=True))
        return Decision(action='none', current=current, recommended=recommended,
                        next=current, reasons=reasons, bounds_block=bounds_block,
                        numbers=numbers)
    if remaining is not None and remaining > 0:
        numbers['held_step'] = nxt.as_dict()
        ago = f'{since:.0f} s ago' if since is not None else 'at an unknown time'
        limit = (f'rate limit: last change {ago}; next change allowed in {remaining:.0f} s '
                 f'(interval {interval:.0f} s = max(min_interval_s '
                 f'{inp.knobs.min_interval_s:.0f}, hit_set_period {inp.hit_set_period_s}), '
                 f'as each change resets the PGs\' hit sets)')
        if since is not None and since < 0:
            limit += '; the last change is recorded in the future (clock stepped back?)'
        reasons = _Reasons(partial(_reasons, [limit, *lead], current, recommended, current, law,
                                   'rate limited', inp))
        return Decision(action='hold', current=current, recommended=recommended,
                        next=current, reasons=reasons, bounds_block=bounds_block,
                        numbers=numbers)
    reasons = _Reasons(partial(_reasons, lead, current, recommended, nxt, law, None, inp))
    return Decision(action='change', current=current, recommended=recommended, next=nxt,
                    reasons=reasons, bounds_block=bounds_block, numbers=numbers)
