"""The promote gate: how much client IO the cache absorbs rather than
proxies to the base, and what limits it (the per-OSD promote throttle, or
the recency settings), with the settings that would lift the limit."""

import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Dict, Optional

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .hits import _absorbed
from .sampling import AgentLevels
from .series import MIB, _count, _nnz, _Series, _wmean
from .topology import CacheTier

# --- promotion --------------------------------------------------------------
# Promotions at this fraction of the throttle are throttled: the per-OSD
# throttle is a hard cap, but PGs (and so promotes) spread unevenly over
# OSDs, so the busiest OSD reaches it before the pool total does.
THROTTLE_FRACTION = 0.8
# Proxied shares below this are "almost everything absorbed"; at or above it
# a limiter is worth naming.
MEANINGFUL_PROXIED_SHARE = 0.05
# Intervals with client IO needed in the window before naming a limiter.
GATE_MIN_ACTIVE = 3
# A recommended promote bytes/s limit is rounded up to this.
PROMOTE_BYTES_STEP = MIB


@dataclass(frozen=True)
class PromoteLimits:
    """The per-OSD promote throttle and how many OSDs serve the cache pool
    (the module reads these from the OSD config and the OSD map)."""
    max_objects_sec_per_osd: float = 25.0
    max_bytes_sec_per_osd: float = 5 * 1024 * 1024
    osds: int = 1


# fit()'s default: Ceph's defaults, one OSD.
DEFAULT_LIMITS = PromoteLimits()


@dataclass(frozen=True)
class PromoteGate:
    """How much client IO the cache absorbs vs proxies, and what limits it."""
    write_absorbed: Optional[float]  # fraction of client write bytes served by the cache
    read_absorbed: Optional[float]
    promote_ops_sec: float
    throttle_ops_sec: float          # PromoteLimits objects/s x osds
    limiter: str                     # 'none' | 'recency' | 'throttle' | 'unknown'
    detail: str                      # one sentence for status/eval
    recommend: Dict[str, Any]        # e.g. {'min_write_recency_for_promote': 0}; may be empty


def _pct(x: float) -> str:
    return f'{100 * x:.0f}%'


def _gate(throttle_ops: float, limiter: str, detail: str,
          recommend: Optional[Dict[str, Any]] = None, write: Optional[float] = None,
          read: Optional[float] = None, promote: float = 0.0) -> PromoteGate:
    # Module level, not a closure in _promote: a nested def evaluates its
    # typing annotations on every call.
    return PromoteGate(write, read, promote, throttle_ops, limiter, detail, recommend or {})


def _promote(s: _Series, tier: CacheTier, limits: PromoteLimits,
             levels: Optional[AgentLevels]) -> PromoteGate:
    throttle_ops = limits.max_objects_sec_per_osd * limits.osds
    throttle_bytes = limits.max_bytes_sec_per_osd * limits.osds
    gate = partial(_gate, throttle_ops)

    if not tier.overlay:
        # The base's counters are its clients' own IO: read as proxied by
        # the cache, they would make any cache look bypassed.
        return gate('unknown', f'no overlay: the base sends its clients {tier.clients_go}')
    if not len(s):
        return gate('unknown', 'no samples with rates yet')
    promote_now = _wmean(s.promote, s.short_w, s.short_total) or 0.0
    window = s.window(s.px_write_known)
    dt = s.dt[window]
    if not dt.size:
        return gate('unknown', 'no base pool counters: proxied IO is unknown',
                    promote=promote_now)
    write = _absorbed(s.write_bytes[window], s.px_write_bytes[window], dt)
    read = _absorbed(s.read_bytes[window], s.px_read_bytes[window], dt)
    active = s.active[window]
    n_active = int(_nnz(active))
    span = f'the last {float(s.t[-1] - np.minimum.reduce(s.start[window])):.0f} s'
    if n_active < GATE_MIN_ACTIVE:
        return gate('unknown', f'{_count(n_active, "interval")} with client IO in {span}, '
                    f'need {GATE_MIN_ACTIVE}', write=write, read=read, promote=promote_now)

    absorbed = ' and '.join(f'{_pct(x)} of {kind} bytes'
                            for x, kind in ((write, 'write'), (read, 'read')) if x is not None)
    shares = f'the cache absorbed {absorbed or "no client bytes"} over {span}'
    write_px = 1.0 - write if write is not None else 0.0
    read_px = 1.0 - read if read is not None else 0.0
    if max(write_px, read_px) < MEANINGFUL_PROXIED_SHARE:
        return gate('none', f'{shares}: almost nothing is proxied to the base',
                    write=write, read=read, promote=promote_now)

    unknobbed = _no_promote_knobs(tier)
    if unknobbed is not None:
        return gate('none', f'{shares}; {unknobbed}: neither the recency settings nor the '
                    'promote throttle apply', write=write, read=read, promote=promote_now)

    busy = dt[active]
    busy_s = float(np.add.reduce(busy))
    promote_busy = float(s.promote[window][active].dot(busy)) / busy_s
    proxied_busy = max(float(s.px_ops[window].dot(dt)), 0.0) / busy_s
    avg_obj = levels.avg_object_bytes if levels is not None else 0.0
    load = max(promote_busy / throttle_ops if throttle_ops > 0 else 0.0,
               promote_busy * avg_obj / throttle_bytes if throttle_bytes > 0 else 0.0)
    promotes = (f'promotes ran at {promote_busy:.1f}/s while busy, {100 * load:.0f}% of '
                f'the throttle ({throttle_ops:.0f} objects/s, '
                f'{throttle_bytes / MIB:.0f} MiB/s over {_count(limits.osds, "OSD")})')
    if load >= THROTTLE_FRACTION:
        return gate('throttle', f'{shares}; {promotes}, with {proxied_busy:.1f} ops/s '
                    'still proxied', write=write, read=read,
                    promote=promote_now,
                    recommend=_throttle_recommend(promote_busy + proxied_busy, avg_obj, limits))
    recommend: Dict[str, Any] = {}
    for share, key in ((write_px, 'min_write_recency_for_promote'),
                       (read_px, 'min_read_recency_for_promote')):
        recency = int(getattr(tier, key))
        if share >= MEANINGFUL_PROXIED_SHARE and recency >= 1:
            recommend[key] = recency - 1
    if recommend:
        names = ' and '.join(f'{k} {getattr(tier, k)}' for k in recommend)
        return gate('recency', f'{shares}; {promotes}; {names} keeps the rest out',
                    recommend=recommend, write=write, read=read, promote=promote_now)
    # With bloom hit sets a write to an uncached object is proxied and only
    # then promoted (clean), whatever the recency: neither knob helps.
    return gate('none', f'{shares}; {promotes} and recency is already 0: the rest is first '
                'touches of uncached objects, which the cache proxies and then promotes',
                write=write, read=read, promote=promote_now)


def _no_promote_knobs(tier: CacheTier) -> Optional[str]:
    """Why the OSD reads neither min_*_recency_for_promote nor the promote
    throttle for the tier, or None when it does: only a writeback tier
    with hit sets calls maybe_promote (PrimaryLogPG::maybe_handle_cache_detail);
    in the other modes, and without hit sets, a miss promotes or is
    proxied whatever they are (the gate recommended a recency that
    changes nothing: a review helper)."""
    mode = tier.cache_mode
    if mode in ('readproxy', 'readforward'):
        return f'cache_mode {mode}: writes always promote, reads are always proxied'
    if mode == 'readonly':
        return ('cache_mode readonly: reads of uncached objects always promote, writes go '
                'to the base')
    if mode != 'writeback':
        return f'cache_mode {mode}: every op is proxied, none promotes'
    if not tier.hit_set.active:
        return 'no hit sets: every miss promotes at once'
    return None


def _throttle_recommend(demand_ops: float, avg_obj: float,
                        limits: PromoteLimits) -> Dict[str, Any]:
    """Per-OSD limits that would let every proxied op's object be promoted."""
    osds = max(limits.osds, 1)
    out: Dict[str, Any] = {}
    objects = math.ceil(demand_ops / osds)
    if objects > limits.max_objects_sec_per_osd:
        out['osd_tier_promote_max_objects_sec'] = objects
    if avg_obj > 0:
        need = math.ceil(demand_ops * avg_obj / osds / PROMOTE_BYTES_STEP) * PROMOTE_BYTES_STEP
        if need > limits.max_bytes_sec_per_osd:
            out['osd_tier_promote_max_bytes_sec'] = need
    return out
