"""What tiertune's own ticks cost the mgr, as `status` reports it.

The serve thread's CPU time per tick (time.thread_time: this thread only,
including the mgr's C++ work to build get('pool_stats') for it, which a
benchmark on a stub mgr leaves out) and its wall time (which also counts
waits: the lock, the monitor commands that apply a change or save the
samples).  The last TICKS_KEPT ticks are kept in memory only: a restarted
mgr starts counting again.
"""

import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Dict, Optional

# Enough ticks for a median that one odd tick (a change applied, a save)
# does not move; ten minutes at the default 30 s sleep_interval.
TICKS_KEPT = 20


@dataclass(frozen=True)
class TickCost:
    cpu_s: float
    wall_s: float
    cache_pools: int
    # CPU seconds of the tick's costly steps (module.tick names them):
    # where a tick on a busy mgr goes.
    parts: Dict[str, float]


class TickCosts:
    def __init__(self) -> None:
        self._ticks: Deque[TickCost] = deque(maxlen=TICKS_KEPT)

    def record(self, cpu_s: float, wall_s: float, cache_pools: int,
               parts: Optional[Dict[str, float]] = None) -> None:
        self._ticks.append(TickCost(max(cpu_s, 0.0), max(wall_s, 0.0), cache_pools,
                                    {k: max(v, 0.0) for k, v in (parts or {}).items()}))

    def summary(self) -> Optional[Dict[str, Any]]:
        """The status JSON's `tick` object, None before the first tick."""
        if not self._ticks:
            return None
        last = self._ticks[-1]
        return {'cpu_ms_last': last.cpu_s * 1000,
                'cpu_ms_median': statistics.median(t.cpu_s for t in self._ticks) * 1000,
                'cpu_ms_max': max(t.cpu_s for t in self._ticks) * 1000,
                'wall_ms_last': last.wall_s * 1000,
                'ticks': len(self._ticks),
                'cache_pools': last.cache_pools,
                # Per step, the median over the ticks that reached it (a
                # failed tick stops early), every step any kept tick reached.
                'cpu_ms_median_parts': {
                    k: statistics.median(t.parts[k] for t in self._ticks if k in t.parts) * 1000
                    for k in dict.fromkeys(k for t in self._ticks for k in t.parts)}}


def tick_line(s: Optional[Dict[str, Any]]) -> str:
    """TickCosts.summary() as one line under the status table."""
    if s is None:
        return 'tiertune has not ticked yet'
    return (f'last tick: {s["cpu_ms_last"]:.1f} ms CPU, {s["wall_ms_last"]:.1f} ms wall, '
            f'{s["cache_pools"]} cache pool{"" if s["cache_pools"] == 1 else "s"}; '
            f'median of the last {s["ticks"]}: {s["cpu_ms_median"]:.1f} ms CPU '
            f'(max {s["cpu_ms_max"]:.1f})')


class StepClock:
    """The CPU seconds of consecutive steps of a tick, into parts: each
    mark() ends the step begun at the last mark (or at the clock's start)."""

    def __init__(self, parts: Dict[str, float]) -> None:
        self._parts = parts
        self._since = time.thread_time()

    def mark(self, step: str) -> None:
        now = time.thread_time()
        self._parts[step] = now - self._since
        self._since = now
