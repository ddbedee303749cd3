"""Each pool's sample history as the module's store keeps it, so that a mgr
restart or failover does not forget what the models were fitted on: the
bursts seen, the inflow's long average, the hit curve.  Without it, the
first quiet minutes after a failover look like a pool that never bursts,
and the law would give up the room it kept for the next burst (full back
up to its ceiling) until one came.

Plain data in and out: a PoolHistory's samples to a JSON text, and a text
back to samples on the current monotonic clock.  Rates are not stored: the
history derives them again as the samples are added back.

The text is columns, not one object per sample: the counter names once,
and each cumulative counter as deltas from the sample before, which stay
small.  A config-key value is limited to mon_config_key_max_entry_size
(64 KiB by default); the oldest samples are left out until the text fits
under MAX_TEXT_BYTES.
"""

import itertools
import json
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .sampling import COUNTER_NAMES, PoolCounters, PoolSample

FORMAT_VERSION = 1
# Under the mon's default 64 KiB limit for one config-key value, with room
# for a mon configured lower by a few KiB.
MAX_TEXT_BYTES = 56 * 1024
# Wall times to the millisecond: finer than any tick, coarse enough to stay short.
_WALL_SCALE = 1000.0


def _deltas(values: Sequence[int]) -> List[int]:
    return [values[0], *(b - a for a, b in itertools.pairwise(values))] if values else []


def _undelta(deltas: Sequence[Any]) -> List[int]:
    out: List[int] = []
    total = 0
    for d in deltas:
        total += int(d)
        out.append(total)
    return out


_get_counters = operator.attrgetter(*COUNTER_NAMES)


def _columns(counters: Sequence[PoolCounters]) -> Dict[str, List[int]]:
    # One C call a sample, and the deltas in numpy: a few cache pools are
    # saved every tick, and the tick's cost is bounded (module_cost.py).
    if not counters:
        return {name: [] for name in COUNTER_NAMES}
    rows = np.array([_get_counters(c) for c in counters], dtype=np.int64)
    rows[1:] = np.diff(rows, axis=0)
    return dict(zip(COUNTER_NAMES, rows.T.tolist(), strict=True))


def _encode(entries: Sequence[Tuple[PoolSample, int]]) -> str:
    samples = [s for s, _ in entries]
    with_base = [s.base for s in samples if s.base is not None]
    doc: Dict[str, Any] = {
        'v': FORMAT_VERSION,
        'pool': samples[0].pool_id if samples else None,
        'wall_ms': _deltas([round(s.wall * _WALL_SCALE) for s in samples]),
        'num_pg': [s.num_pg for s in samples],
        'dirty_bytes': _deltas([int(d) for _, d in entries]),
        'counters': _columns([s.counters for s in samples]),
        # which samples had the base pool's counters, and those counters
        'has_base': [int(s.base is not None) for s in samples],
        'base': _columns(with_base) if with_base else None,
    }
    return json.dumps(doc, separators=(',', ':'))


def encode(entries: Sequence[Tuple[PoolSample, int]],
           max_bytes: int = MAX_TEXT_BYTES) -> str:
    """(sample, dirty bytes) pairs, oldest first, as the store's text: the
    newest of them that fit in max_bytes (at least the newest one)."""
    keep = list(entries)
    text = _encode(keep)
    while len(text) > max_bytes and len(keep) > 1:
        # Cut the share that is over, and a little more: a few passes at most.
        over = len(text) / max_bytes
        drop = max(1, len(keep) - int(len(keep) / over * 0.95))
        keep = keep[drop:]
        text = _encode(keep)
    return text


def decode(text: Optional[str], now_mono: float, now_wall: float,
           max_age_s: float) -> Tuple[List[Tuple[PoolSample, int]], Optional[str]]:
    """The stored samples on this process's monotonic clock, oldest first,
    and None; or [] and why the text was not used.  A sample's mono is
    placed by its wall time (the monotonic clock of the mgr that took it is
    another host's, or restarted).  Samples older than max_age_s, or newer
    than now (a wall clock stepped back), are left out."""
    if not text:
        return [], None
    try:
        doc = json.loads(text)
        if doc.get('v') != FORMAT_VERSION:
            return [], f'unknown format version {doc.get("v")!r}'
        walls = _undelta(doc['wall_ms'])
        n = len(walls)
        if n == 0:
            return [], None
        pool = int(doc['pool'])
        num_pg = [int(x) for x in doc['num_pg']]
        dirty = _undelta(doc['dirty_bytes'])
        counters = _rows(doc['counters'], n)
        has_base = [bool(x) for x in doc['has_base']]
        base_rows = _rows(doc['base'], sum(has_base)) if doc.get('base') else []
        if len(num_pg) != n or len(dirty) != n or len(has_base) != n \
                or len(base_rows) != sum(has_base):
            return [], 'columns of different lengths'
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return [], f'not a sample history: {e}'
    out: List[Tuple[PoolSample, int]] = []
    bases = iter(base_rows)
    for i in range(n):
        base = next(bases) if has_base[i] else None
        wall = walls[i] / _WALL_SCALE
        age = now_wall - wall
        if age > max_age_s or age < 0:
            continue
        out.append((PoolSample(pool_id=pool, mono=now_mono - age, wall=wall, num_pg=num_pg[i],
                               counters=counters[i], base=base), dirty[i]))
    return out, None


def _rows(cols: Dict[str, Any], n: int) -> List[PoolCounters]:
    """Counters per sample from the delta columns; a counter this version
    has and the text lacks counts as 0 (what PoolCounters does with a
    missing stat), one the text has and this version lacks is ignored."""
    values = {name: _undelta(cols[name]) if name in cols else [0] * n for name in COUNTER_NAMES}
    for name, col in values.items():
        if len(col) != n:
            raise ValueError(f'counter {name} has {len(col)} values, not {n}')
    return [PoolCounters(*(values[name][i] for name in COUNTER_NAMES)) for i in range(n)]
