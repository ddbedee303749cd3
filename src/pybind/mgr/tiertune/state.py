"""What tiertune must not lose over a mgr restart or failover.

Plain data with JSON round-trips; the module keeps it in its config-key
store (`mgr/tiertune/state` for settings, `mgr/tiertune/history/<pool id>`
for each pool's decisions) and writes a key only when it changed.
"""

import base64
import dataclasses
import json
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .bounds import (
    RATIO_MAX,
    Bounds,
    Knobs,
    as_dict,
    bounds_from_dict,
    knobs_from_dict,
    unusable_fields,
)
from .stepping import same
from .topology import Ratios

MODES = ('off', 'warn', 'on')
# `mode <pool> default`: drop the pool's own mode, follow the default again.
FOLLOW_DEFAULT = 'default'
DEFAULT_MODE = 'warn'    # as pg_autoscaler's was: report before acting
HISTORY_KEEP = 100       # decisions kept per pool


def ratios_from_dict(d: Dict[str, Any]) -> Ratios:
    """Ratios as stored; a value that is no ratio (NaN, infinite, outside
    0..1) is refused (ValueError): kept, it made `reset` raise in
    actuation.plan, and printed NaN into status' JSON."""
    r = Ratios(dirty=float(d['dirty']), dirty_high=float(d['dirty_high']),
               full=float(d['full']))
    for name, v in r.as_dict().items():
        if not 0.0 <= v <= 1.0:     # NaN fails it too
            raise ValueError(f'{name} {v} is not a ratio in 0..1')
    return r


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
    # A change tiertune is making, stored before its first `osd pool set`
    # and cleared after the last (see PlannedChange).
    planned: Optional['PlannedChange'] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            'mode': self.mode,
            'bounds': _set_by_operator(self.bounds),
            'knobs': _set_by_operator(self.knobs),
            'baseline': self.baseline.as_dict() if self.baseline else None,
            'last_applied': self.last_applied.as_dict() if self.last_applied else None,
            'last_change_wall': self.last_change_wall,
            'manual_change': self.manual_change,
            'planned': self.planned.to_dict() if self.planned else None,
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
            last_change_wall=_opt_wall(d.get('last_change_wall')),
            manual_change=_opt_str(d.get('manual_change')),
            planned=PlannedChange.from_dict(d['planned']) if d.get('planned') else None,
        )


@dataclass(frozen=True)
class PlannedChange:
    """A change of a pool's ratios as tiertune is about to make it: the
    ratios after each of its `osd pool set`s (path[0] the ones before), and
    when (wall clock).  Stored before the first command: a mgr that takes
    over after a failover or crash part way through finds the pool at one of
    these, which is tiertune's own change cut short, not a hand change."""
    path: Tuple[Ratios, ...]
    wall: float

    def reached(self, ratios: Ratios) -> Optional[Ratios]:
        """The state on the path after a command that ratios are, if any."""
        return next((r for r in self.path[1:] if same(r, ratios)), None)

    def to_dict(self) -> Dict[str, Any]:
        return {'path': [r.as_dict() for r in self.path], 'wall': self.wall}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'PlannedChange':
        wall = _opt_wall(d['wall'])
        if wall is None:
            raise ValueError('planned change without a time')
        path = tuple(ratios_from_dict(r) for r in d['path'])
        if len(path) < 2:
            # Every tick would fail on it (the pool's TIERTUNE_POOL_FAILED
            # until `mode on`): refused here, with the pool's other fields.
            raise ValueError(f'planned change of {len(path)} state(s), not a path')
        return cls(path, wall)


def _set_by_operator(obj: Any) -> Dict[str, float]:
    """The fields of a Bounds or Knobs that differ from its defaults: the
    stored settings stay small (the mon refuses a value over 64 KiB), and
    from_dict gives the defaults for the rest."""
    default = type(obj)()
    return {k: v for k, v in as_dict(obj).items() if v != getattr(default, k)}


def _opt_wall(v: Any) -> Optional[float]:
    """A stored wall-clock time or None; anything else is refused
    (ValueError), not kept to fail later, in a tick's arithmetic or in a
    command that prints it as a local time (NaN, or a time past what
    time_t holds, made `tiertune history` raise)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f'not a number: {v!r}')
    try:
        time.localtime(v)
    except (OverflowError, OSError, ValueError) as e:
        raise ValueError(f'not a time: {v!r} ({e})') from None
    return float(v)


def _opt_str(v: Any) -> Optional[str]:
    return None if v is None else str(v)


# What a stored value that cannot be read raises, from json.loads
# (ValueError) to a missing or mistyped field.
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, zlib.error)


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
        return self.effective_mode_of(ps) if ps else self.mode

    def effective_mode_of(self, ps: PoolState) -> str:
        return ps.mode or self.mode

    def to_json(self) -> str:
        # A pool with nothing set differs in nothing from a missing one.
        unset = PoolState()
        return json.dumps({'mode': self.mode,
                           'pools': {str(k): v.to_dict() for k, v in self.pools.items()
                                     if v != unset}},
                          sort_keys=True)


# The key of a stored settings text that is zlib-compressed (base64).
PACKED_KEY = 'zlib'


def settings_to_store(settings: Settings, max_bytes: int) -> str:
    """The settings' text for the store: plain JSON (readable with `config-key
    get`) while it fits in max_bytes, else compressed.  Each pool with
    settings of its own adds about 270 bytes of JSON, so a few hundred
    cache pools pass the mon's 64 KiB limit for one value; compressed,
    several times as many fit (the caller still checks the length)."""
    text = settings.to_json()
    if len(text) <= max_bytes:
        return text
    packed = base64.b64encode(zlib.compress(text.encode(), 9)).decode('ascii')
    return json.dumps({PACKED_KEY: packed})


def _unpacked(text: str) -> str:
    """settings_to_store's text as plain JSON."""
    d = json.loads(text)
    if isinstance(d, dict) and set(d) == {PACKED_KEY}:
        return zlib.decompress(base64.b64decode(d[PACKED_KEY], validate=True)).decode()
    return text


def settings_from_store(text: Optional[str]) -> Tuple[Settings, List[str]]:
    """The stored settings, and what could not be read of them: a pool
    whose entry is unreadable gets default bounds in `warn` mode (not the
    default mode, which may be `on`: its entry may have said off, or held
    the hand change tiertune was respecting), and an unreadable whole gives
    the defaults (mode warn).  Never raises: the module must start
    whatever the store holds."""
    if not text:
        return Settings(), []
    try:
        d = json.loads(_unpacked(text))
        pools = d.get('pools') or {}
        mode = d.get('mode')
        items = list(pools.items())
    except UNREADABLE as e:
        return Settings(), [f'settings unreadable ({type(e).__name__}: {e}); defaults used']
    problems = []
    if mode is not None and mode not in MODES:
        problems.append(f'default mode {mode!r} unknown; {DEFAULT_MODE} used')
    settings = Settings(mode=mode if mode in MODES else DEFAULT_MODE)
    for key, value in items:
        try:
            pool_mode = value.get('mode')
            if pool_mode is not None and pool_mode not in MODES:
                # Not the default mode, which may be `on`: it may have meant off.
                problems.append(f'pool {key}: mode {pool_mode!r} unknown; mode warn')
                value = {**value, 'mode': 'warn'}
            state = PoolState.from_dict(value)
            bad_bounds, bad_knobs = unusable_fields(state.bounds), unusable_fields(state.knobs)
            unusable = bad_bounds + bad_knobs
            if unusable:
                # Never a value `set` accepts (NaN, infinite, a bound outside
                # 0..1): each put back to its default, where it cannot break
                # status' JSON or refuse every `set` of another key.  The
                # operator's value is unknown, so the pool acts on none: warn
                # (off stays off).
                problems.append(f'pool {key}: {", ".join(f"{k} {v}" for k, v in unusable)} '
                                f'unusable; default(s) used, mode '
                                f'{"off" if state.mode == "off" else "warn"}')
                state.bounds = _defaults_for(state.bounds, bad_bounds)
                state.knobs = _defaults_for(state.knobs, bad_knobs)
                state.mode = 'off' if state.mode == 'off' else 'warn'
            over = [k for k, v in as_dict(state.bounds).items() if RATIO_MAX < v <= 1.0]
            if over:
                # Accepted by an earlier version; now refused by `set`, and
                # held as a problem: left as stored, no single `set` could
                # mend two of them.
                problems.append(f'pool {key}: bound(s) {", ".join(over)} above {RATIO_MAX} '
                                f'read as {RATIO_MAX}')
                state.bounds = dataclasses.replace(state.bounds, **{k: RATIO_MAX for k in over})
            settings.pools[int(key)] = state
        except UNREADABLE as e:
            problems.append(f'pool {key}: settings unreadable ({type(e).__name__}: {e}); '
                            f'default bounds, mode warn')
            try:
                settings.pools[int(key)] = PoolState(mode='warn')
            except ValueError:
                pass    # not a pool id: nothing to keep
    return settings, problems


def _defaults_for(obj: Any, fields: Sequence[Tuple[str, float]]) -> Any:
    """A Bounds or Knobs with these (unusable_fields) at their defaults."""
    default = type(obj)()
    return dataclasses.replace(obj, **{k: getattr(default, k) for k, _ in fields})


@dataclass(frozen=True)
class DecisionRecord:
    """One decision tiertune acted on (or failed to), for `tiertune history`."""
    time: float                  # wall clock
    pool: str
    mode: str
    old: Ratios
    new: Ratios
    reason: str
    result: str                  # 'applied' | 'failed: ...' | 'incomplete: ...' | 'reset'

    def to_dict(self) -> Dict[str, Any]:
        return {'time': self.time, 'pool': self.pool, 'mode': self.mode,
                'old': self.old.as_dict(), 'new': self.new.as_dict(),
                'reason': self.reason, 'result': self.result}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'DecisionRecord':
        when = _opt_wall(d['time'])
        if when is None:
            raise ValueError('decision without a time')
        return cls(time=when, pool=str(d['pool']), mode=str(d['mode']),
                   old=ratios_from_dict(d['old']), new=ratios_from_dict(d['new']),
                   reason=str(d['reason']), result=str(d['result']))


# The mon refuses a config-key value over mon_config_key_max_entry_size (64
# KiB by default), and Pacific's set_store only logs the refusal: the store
# would keep an older copy.  A decision's reasons run to a few hundred bytes
# each, so HISTORY_KEEP of them can pass that.
HISTORY_MAX_TEXT_BYTES = 56 * 1024


def history_to_store(records: Deque[DecisionRecord]) -> str:
    """The records as JSON (history_from_json reads them back), without
    the oldest if the whole would not fit in HISTORY_MAX_TEXT_BYTES."""
    items = [json.dumps(r.to_dict()) for r in records]
    size = 2 + sum(len(i.encode()) for i in items) + 2 * max(len(items) - 1, 0)
    first = 0
    while size > HISTORY_MAX_TEXT_BYTES and first < len(items):
        size -= len(items[first].encode()) + (2 if first < len(items) - 1 else 0)
        first += 1
    return '[' + ', '.join(items[first:]) + ']'


def history_from_json(text: Optional[str]) -> Tuple[Deque[DecisionRecord], int]:
    """The records stored, and how many of them could not be read: each
    is left out alone (one record without a field lost the whole history,
    and the next save overwrote it: found by a review helper).  A text
    that is not a JSON list raises."""
    items = json.loads(text) if text else []
    if not isinstance(items, list):
        raise ValueError(f'not a list of decisions: {type(items).__name__}')
    records: Deque[DecisionRecord] = deque(maxlen=HISTORY_KEEP)
    unreadable = 0
    for d in items:
        try:
            records.append(DecisionRecord.from_dict(d))
        except UNREADABLE:
            unreadable += 1
    return records, unreadable
