"""Turn a ratio change into an ordered batch of `osd pool set` commands.

Pure.  The mon checks each ratio against 0..1 only, never the ordering, so
the order of the commands is what keeps dirty <= dirty_high <= full true
after every single command, not just at the end.
"""

import math
import re
from typing import Dict, List, Optional, Tuple

from .topology import MICRO, Ratios

POOL_VARS = {'dirty': 'cache_target_dirty_ratio',
             'dirty_high': 'cache_target_dirty_high_ratio',
             'full': 'cache_target_full_ratio'}

# Bottom to top: the order the invariant dirty <= dirty_high <= full reads in.
ORDER = ('dirty', 'dirty_high', 'full')

# The mon's reply to `osd pool set` names the pool it set by id
# (OSDMonitor::prepare_command_pool_set: "set pool <id> <var> to <val>").
SET_REPLY = re.compile(r'set pool (-?\d+) ')


def to_micro(value: float) -> int:
    """The value the mon stores for `value`: llrintl(value * 1e6).  Python's
    round() rounds halves to even, as llrintl does in the default rounding
    mode."""
    return int(round(value * MICRO))


def _micros(r: Ratios, what: str) -> Dict[str, int]:
    out = {}
    for name in ORDER:
        v = float(getattr(r, name))
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            # The mon would refuse it (-ERANGE); a caller bug, not a plan.
            raise ValueError(f'{what} {name} ratio {v!r} is outside 0..1')
        out[name] = to_micro(v)
    return out


def _ordered(m: Dict[str, int]) -> bool:
    return 0 <= m['dirty'] <= m['dirty_high'] <= m['full'] <= MICRO


def _applicable(state: Dict[str, int], name: str, value: int) -> bool:
    trial = dict(state)
    trial[name] = value
    return _ordered(trial)


def plan(current: Ratios, target: Ratios) -> List[Tuple[str, float]]:
    """[(pool var, value), ...] taking current to target such that every
    intermediate state keeps 0 <= dirty <= dirty_high <= full <= 1 (given
    both endpoints do).  Ratios that do not change are left out.

    Everything is compared in the mon's millionths, so a ratio whose target
    rounds to the stored value is unchanged, and the ordering is checked on
    the values the mon will actually hold.  Values are returned rounded to 6
    decimals (format them with '%.6f').  Raises ValueError if a ratio is
    outside 0..1 (the mon would refuse it).

    Algorithm: repeatedly apply the first applicable pending change, looking
    first for the topmost pending raise, then for the bottommost pending
    lowering.

    Termination and correctness (both endpoints ordered): each round applies
    one pending change, and there are at most 3, so at most 3 rounds; it
    remains to show some pending change is always applicable.  Every ratio x
    is at its current value c or its target t.
      * If some raise is pending, take the topmost one, i (t_i > c_i = x_i).
        Below: x_{i-1} <= c_i (the state is ordered) < t_i.  Above: x_{i+1}
        is either done, so x_{i+1} = t_{i+1} >= t_i (target ordered), or a
        pending lowering (a pending raise above i would be topmost), so
        x_{i+1} = c_{i+1} > t_{i+1} >= t_i; or i is full and t_i <= 1.
        Setting x_i = t_i keeps the order.
      * Otherwise only lowerings are pending; the bottommost one is
        applicable by the mirror argument.
    So raises go top-down (full, dirty_high, dirty) and lowerings bottom-up.

    If an endpoint is itself misordered (a hand-set pool, or a baseline
    restored by `reset`), no order can keep the invariant everywhere: once no
    pending change keeps it, the rest are applied in the same preference
    order (a total order, so the plan still ends at target).
    """
    cur = _micros(current, 'current')
    tgt = _micros(target, 'target')
    state = dict(cur)
    pending = [n for n in ORDER if tgt[n] != cur[n]]
    out: List[Tuple[str, float]] = []
    while pending:
        raises = [n for n in reversed(ORDER) if n in pending and tgt[n] > state[n]]
        lowers = [n for n in ORDER if n in pending and tgt[n] < state[n]]
        preference = raises + lowers
        chosen: Optional[str] = next(
            (n for n in preference if _applicable(state, n, tgt[n])), None)
        if chosen is None:
            chosen = preference[0]
        state[chosen] = tgt[chosen]
        pending.remove(chosen)
        out.append((POOL_VARS[chosen], round(tgt[chosen] / MICRO, 6)))
    return out


def pool_set_elsewhere(pool_id: int, reply: str) -> Optional[str]:
    """The error to record when the mon's reply to an `osd pool set` says
    it set another pool than pool_id; None when it names pool_id, or names
    no pool (a reply this code does not know: nothing to check).

    The command can only name the pool (the mon looks the name up), so a
    rename, and another tier given the old name, between the OSD map a
    change was planned on and its command send it to that other pool.  The
    change stops there: each further command would go to it too."""
    m = SET_REPLY.match(reply.strip())
    if m is None or int(m.group(1)) == pool_id:
        return None
    return (f'the mon set pool {m.group(1)}, not pool {pool_id}: the name was given to '
            f'another pool since the OSD map was read; nothing more is sent')
