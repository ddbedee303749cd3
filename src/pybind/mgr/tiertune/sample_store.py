"""Each pool's sample history as the module's store keeps it, so that a mgr
restart or failover does not forget what the models were fitted on: the
bursts seen, the inflow's long average, the hit curve.  Without it, the
first quiet minutes after a failover look like a pool that never bursts,
and the law would give up the room it kept for the next burst (full back
up to its ceiling) until one came.

Plain data in and out: a PoolHistory's samples to a JSON text, and a text
back to samples on the current monotonic clock.  Rates are not stored: the
history derives them again as the samples are added back.

The samples are one table of integers, a row a sample and a column a
field (wall time in ms, num_pg, dirty bytes, whether the base pool was
sampled, the cache pool's counters, the base pool's), stored as each row's
difference from the one before (small numbers), int64 little-endian,
zlib-compressed and base64'd, with the column names beside it in the JSON.
A text of lists of numbers was tried first: it cost a tick with 64 cache
pools 2 ms (0.5 ms to encode a pool, the rest the garbage collector
walking its thousands of int objects); this costs a fraction of that and
keeps 120 samples in a few KiB.  A config-key value is limited to
mon_config_key_max_entry_size (64 KiB by default); the oldest samples are
left out until the text fits under MAX_TEXT_BYTES.
"""

import base64
import binascii
import json
import operator
import struct
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .rates import StoredSample
from .sampling import COUNTER_NAMES, PoolCounters, PoolSample

FORMAT_VERSION = 1
# Under the mon's default 64 KiB limit for one config-key value, with room
# for a mon configured lower by a few KiB.
MAX_TEXT_BYTES = 56 * 1024
# Wall times to the millisecond: finer than any tick, coarse enough to stay short.
_WALL_SCALE = 1000.0
_HEAD = ('wall_ms', 'num_pg', 'dirty_bytes', 'has_base')
# Columns a text may lack (written before they were added): acting read as
# 0, base.id as not known (-1), mono_ms as not there (samples placed by
# their wall time alone), unmeasured as 0 (the interval into the sample
# measured: its rates derived again).
_LATER = ('acting', 'base.acting', 'base.id', 'mono_ms', 'unmeasured')
COLUMNS = (*_HEAD, *_LATER, *COUNTER_NAMES, *(f'base.{n}' for n in COUNTER_NAMES))
_ZEROS = (0,) * len(COUNTER_NAMES)
_get_counters = operator.attrgetter(*COUNTER_NAMES)


def _row(sample: PoolSample, dirty: int, measured: bool = True) -> Tuple[int, ...]:
    base = _get_counters(sample.base) if sample.base is not None else _ZEROS
    return (round(sample.wall * _WALL_SCALE), sample.num_pg, int(dirty),
            int(sample.base is not None), sample.acting, sample.base_acting,
            sample.base_pool_id, round(sample.mono * _WALL_SCALE), int(not measured),
            *_get_counters(sample.counters), *base)


_pack_row = struct.Struct(f'<{len(COLUMNS)}q').pack

# One pool's rows as bytes, by the sample's mono: floats and bytes, which
# the garbage collector does not track (a tick with 64 cache pools walks
# what the module holds).
RowCache = Dict[float, bytes]


def _encode(rows: Sequence[bytes], pool: Optional[int], overlay: Optional[bool]) -> str:
    table = np.frombuffer(b''.join(rows), dtype='<i8').reshape(len(rows), len(COLUMNS))
    table = np.concatenate([table[:1], np.diff(table, axis=0)])
    data = base64.b64encode(zlib.compress(table.tobytes(), 1)).decode('ascii')
    doc = {'v': FORMAT_VERSION, 'pool': pool, 'rows': len(rows), 'columns': COLUMNS,
           'data': data}
    if overlay is not None:
        doc['overlay'] = overlay
    return json.dumps(doc, separators=(',', ':'))


def stored_overlay(text: Optional[str]) -> Optional[bool]:
    """Whether the base sent its clients to the tier when the samples were
    taken (encode's overlay), or None when the text does not say."""
    try:
        v = json.loads(text or '{}').get('overlay')
    except (ValueError, AttributeError):
        return None
    return v if isinstance(v, bool) else None


def encode(entries: Sequence[StoredSample], max_bytes: int = MAX_TEXT_BYTES,
           cache: Optional[RowCache] = None, overlay: Optional[bool] = None) -> str:
    """Stored samples (rates.HistoryBook.saved_entries), oldest first, as
    the store's text: the newest of them that fit in max_bytes (at least
    the newest one).

    cache: the pool's rows as bytes from the call before, updated in place
    (rows of samples no longer given are dropped).  Turning Python ints
    into an array is most of the cost, and from one save to the next most
    samples are the same.  overlay: whether the base sent its clients to the
    tier meanwhile (see stored_overlay), kept beside the samples."""
    pool = entries[0][0].pool_id if entries else None
    old = cache if cache is not None else {}
    # struct packs a row of Python ints at half the cost of numpy's
    # conversion of the same rows (the same int64 little-endian bytes).
    rows = [old.get(s.mono) or _pack_row(*_row(s, d, m)) for s, d, m in entries]
    if cache is not None:
        kept = {s.mono: row for (s, _, _), row in zip(entries, rows)}
        cache.clear()
        cache.update(kept)
    text = _encode(rows, pool, overlay)
    while len(text) > max_bytes and len(rows) > 1:
        # Cut the share that is over, and a little more: a few passes at most.
        over = len(text) / max_bytes
        rows = rows[max(1, len(rows) - int(len(rows) / over * 0.95)):]
        text = _encode(rows, pool, overlay)
    return text


def decode(text: Optional[str], now_mono: float, now_wall: float,
           max_age_s: float) -> Tuple[List[StoredSample], Optional[str]]:
    """The stored samples on this process's monotonic clock, oldest first,
    and None; or [] and why the text was not used.  The newest sample is
    placed by its wall time (the monotonic clock of the mgr that took it is
    another host's, or restarted), the others before it by their
    monotonic times: a wall clock stepped on the mgr that took them would
    change the intervals the rates divide by (a step back of 25 s between
    samples 30 s apart read as a burst six times the writes).  A text
    without monotonic times (written before they were kept) is placed by
    wall times.  Samples older than max_age_s, or newer than now (this
    host's wall clock behind the one that took them), are left out.  A
    counter this
    version has and the text lacks counts as 0 (what PoolCounters does with
    a missing stat); one the text has and this version lacks is ignored."""
    if not text:
        return [], None
    try:
        doc = json.loads(text)
        if doc.get('v') != FORMAT_VERSION:
            return [], f'unknown format version {doc.get("v")!r}'
        n = int(doc['rows'])
        if n == 0:
            return [], None
        pool = int(doc['pool'])
        names = [str(c) for c in doc['columns']]
        raw = zlib.decompress(base64.b64decode(doc['data'], validate=True))
        table = np.frombuffer(raw, dtype='<i8')
        if table.size != n * len(names):
            return [], f'{table.size} values for {n} rows of {len(names)} columns'
        table = np.cumsum(table.reshape(n, len(names)), axis=0)
        if any(h not in names for h in _HEAD):
            return [], 'columns missing'
    except (ValueError, TypeError, KeyError, AttributeError, zlib.error, binascii.Error) as e:
        return [], f'not a sample history: {e}'
    zero = np.zeros(n, dtype=np.int64)
    col = {name: table[:, i] for i, name in enumerate(names)}
    counters = np.stack([col.get(c, zero) for c in COUNTER_NAMES], axis=1).tolist()
    base = np.stack([col.get(f'base.{c}', zero) for c in COUNTER_NAMES], axis=1).tolist()
    walls, pgs = col['wall_ms'].tolist(), col['num_pg'].tolist()
    acting, base_acting = col.get('acting', zero).tolist(), col.get('base.acting', zero).tolist()
    base_ids = col['base.id'].tolist() if 'base.id' in col else [-1] * n
    dirty, has_base = col['dirty_bytes'].tolist(), col['has_base'].tolist()
    unmeasured = col.get('unmeasured', zero).tolist()
    ages = _ages(walls, col['mono_ms'].tolist() if 'mono_ms' in col else None, now_wall)
    out: List[StoredSample] = []
    for i in range(n):
        age = ages[i]
        if age > max_age_s or age < 0:
            continue
        out.append((PoolSample(pool_id=pool, mono=now_mono - age, wall=walls[i] / _WALL_SCALE,
                               num_pg=pgs[i], counters=PoolCounters(*counters[i]),
                               base=PoolCounters(*base[i]) if has_base[i] else None,
                               acting=acting[i], base_acting=base_acting[i],
                               base_pool_id=base_ids[i]),
                    dirty[i], not unmeasured[i]))
    return out, None


def _ages(walls_ms: List[int], monos_ms: Optional[List[int]], now_wall: float) -> List[float]:
    """Each row's age in seconds now (see decode)."""
    if monos_ms is None:
        return [now_wall - w / _WALL_SCALE for w in walls_ms]
    newest = now_wall - walls_ms[-1] / _WALL_SCALE
    return [newest + (monos_ms[-1] - m) / _WALL_SCALE for m in monos_ms]
