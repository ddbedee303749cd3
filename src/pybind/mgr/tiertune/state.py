"""What tiertune must not lose over a mgr restart or failover.

Plain data with JSON round-trips; the module keeps it in its config-key
store (`mgr/tiertune/state` for settings, `mgr/tiertune/history/<pool id>`
for each pool's decisions) and writes a key only when it changed.
"""

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional

from .bounds import Bounds, Knobs, as_dict, bounds_from_dict, knobs_from_dict
from .topology import Ratios

MODES = ('off', 'warn', 'on')
DEFAULT_MODE = 'warn'    # as pg_autoscaler's was: report before acting
HISTORY_KEEP = 100       # decisions kept per pool


def ratios_from_dict(d: Dict[str, Any]) -> Ratios:
    return Ratios(dirty=float(d['dirty']), dirty_high=float(d['dirty_high']),
                  full=float(d['full']))


@dataclass
class PoolState:
    mode: Optional[str] = None           # None: follow the global mode
    bounds: Bounds = field(default_factory=Bounds)
    knobs: Knobs = field(default_factory=Knobs)
    # The ratios the pool had when tiertune first took control (`reset`
    # restores them).
    baseline: Optional[Ratios] = None
    # What tiertune last set, and when (wall clock: it must survive a mgr
    # restart, where the monotonic clock starts again).
    last_applied: Optional[Ratios] = None
    last_change_wall: Optional[float] = None
    # Set when the operator changed a ratio by hand: what tiertune saw and did.
    manual_change: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            'mode': self.mode,
            'bounds': as_dict(self.bounds),
            'knobs': as_dict(self.knobs),
            'baseline': self.baseline.as_dict() if self.baseline else None,
            'last_applied': self.last_applied.as_dict() if self.last_applied else None,
            'last_change_wall': self.last_change_wall,
            'manual_change': self.manual_change,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'PoolState':
        mode = d.get('mode')
        return cls(
            mode=mode if mode in MODES else None,
            bounds=bounds_from_dict(d.get('bounds') or {}),
            knobs=knobs_from_dict(d.get('knobs') or {}),
            baseline=ratios_from_dict(d['baseline']) if d.get('baseline') else None,
            last_applied=ratios_from_dict(d['last_applied']) if d.get('last_applied') else None,
            last_change_wall=d.get('last_change_wall'),
            manual_change=d.get('manual_change'),
        )


@dataclass
class Settings:
    mode: str = DEFAULT_MODE
    pools: Dict[int, PoolState] = field(default_factory=dict)   # by pool id

    def pool(self, pool_id: int) -> PoolState:
        if pool_id not in self.pools:
            self.pools[pool_id] = PoolState()
        return self.pools[pool_id]

    def effective_mode(self, pool_id: int) -> str:
        ps = self.pools.get(pool_id)
        return ps.mode if ps and ps.mode else self.mode

    def to_json(self) -> str:
        return json.dumps({'mode': self.mode,
                           'pools': {str(k): v.to_dict() for k, v in self.pools.items()}},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: Optional[str]) -> 'Settings':
        if not text:
            return cls()
        d = json.loads(text)
        mode = d.get('mode')
        return cls(mode=mode if mode in MODES else DEFAULT_MODE,
                   pools={int(k): PoolState.from_dict(v) for k, v in d.get('pools', {}).items()})


@dataclass(frozen=True)
class DecisionRecord:
    """One decision tiertune acted on (or failed to), for `tiertune history`."""
    time: float                  # wall clock
    pool: str
    mode: str
    old: Ratios
    new: Ratios
    reason: str
    result: str                  # 'applied' | 'failed: ...' | 'reset' | 'recommended'

    def to_dict(self) -> Dict[str, Any]:
        return {'time': self.time, 'pool': self.pool, 'mode': self.mode,
                'old': self.old.as_dict(), 'new': self.new.as_dict(),
                'reason': self.reason, 'result': self.result}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'DecisionRecord':
        return cls(time=float(d['time']), pool=str(d['pool']), mode=str(d['mode']),
                   old=ratios_from_dict(d['old']), new=ratios_from_dict(d['new']),
                   reason=str(d['reason']), result=str(d['result']))


def history_to_json(records: Deque[DecisionRecord]) -> str:
    return json.dumps([r.to_dict() for r in records])


def history_from_json(text: Optional[str]) -> Deque[DecisionRecord]:
    items: List[Dict[str, Any]] = json.loads(text) if text else []
    return deque((DecisionRecord.from_dict(d) for d in items), maxlen=HISTORY_KEEP)
