"""The control law proper: a pool's model, its fill and dirty levels and
the operator's bounds in; out, where the law wants the ratios (recommended:
within the bounds, on the hundredths grid, ordered), why for each ratio
(_RatioWhy, which reasons.py puts into words), what the bounds block, and
the figures behind it.  The law is described in words in controller.py's
docstring; stepping toward it and the rate limit are decide's (controller.py).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .bounds import OSD_AGENT_SLOP, Bounds, Knobs
from .models import Band, PoolModel, idle_threshold_bps
from .stepping import NAMES, RATIO_EPS, Triple, _clamp, _f, _triple, order_within, to_mon_grid
from .topology import Ratios

# --- Constants of the law -------------------------------------------------

# Burst length assumed when the model has seen no burst to measure
# (inflow.burst_seconds is None): a minute is the order of the client write
# bursts a cache tier is put in front of (VM boots, batch job phases, backup
# first passes) and of the model's short smoothing horizon, so
# short_bps * 60 s is "the current burst, if it lasts as long again".
TYPICAL_BURST_S = 60.0

# A burst "fits" only if current dirty + burst stays this far below
# dirty_high.  The test is at pool level, but every PG is judged against its
# own share (target/pg_num), and PGs spread around the average; add the
# agent's slop (osd_agent_slop, 0.02 of the ratio) and a pool-level fit with
# less margin still pushes the fuller PGs into HIGH flushing mid-burst.
BURST_FIT_MARGIN = 0.05

# When the cache is about to fill, dirty_high is lowered to this much under
# the pool's dirty fraction: the average PG is then past dirty_high + slop
# (slop = dirty_ratio * osd_agent_slop <= 0.02) and switches to HIGH.
HIGH_ENGAGE_MARGIN = 2 * OSD_AGENT_SLOP

# Where in [full_ratio_min, full_ratio_max] the full ratio goes when the hit
# curve says more occupancy does not bring more hits (slope <= 0): clean
# data that does not pay is better evicted early (room for bursts), but the
# fit is noisy, so go half-way rather than to the minimum.
FULL_NO_PAYOFF_POSITION = 0.5

# A hit curve whose line explains less of the share's variance than this
# is not evidence either way.  Fitted in closed loop (every full-ratio move
# shifts the fill it is fitted against, and drops the hit sets), a weak
# curve's slope changed sign from one rate-limit interval to the next on the
# simulator, and full followed it up and down.
HIT_CURVE_MIN_R2 = 0.3

# Where dirty_high and full (with no hit curve) return to, within their
# bounds, once client writes are idle after the law lowered them: half-way,
# near Ceph's 0.6/0.8 under the default bounds.  Only ever upward, and only
# when idle: the law's pressure to lower them comes with writes.
RELAX_POSITION = 0.5

# A pool with less dirty data than this (fraction of the target) and no
# write surge the model remembers holds only data clients read in: a read
# cache.  Any pool that took writes keeps about dirty_ratio of them (the
# agent flushes only above it, and dirty_ratio_min is 0.1 by default), so
# the test does not mistake a write cache between its bursts for one.
READ_CACHE_DIRTY_MAX = 0.01

# While write surges overrun the cache, dirty_high sits this far above
# dirty_ratio_min (the level the rests drain to), or at its floor if that
# is higher: the next surge lands this much of the target with LOW
# flushing, which evicts more clean objects per completed flush (room
# opens fast while the surge fills the cache), before its PGs flush HIGH,
# which evicts fewer (clean data lasts into the FULL spells, where a
# blocked write waits for one).  On the simulator 0.2 (dirty_high at its
# default floor, 0.3) cost on surges that only just overrun the cache,
# the more the faster the cache against the base, and 0.3 kept most of
# the gain on surges several times the cache; on the local cluster the two
# were level on both.  bench-results/cluster/overrun-floor.md.
OVERRUN_LOW_LANDING = 0.3

# Recommended ratios are rounded to hundredths (then re-clamped and
# re-ordered, so a bound with more decimals still holds): finer than the
# deadband is noise, and round values read well in the audit log.
RECOMMEND_GRID = 0.01

# A byte figure divided by a fraction smaller than this (to recover the
# target in bytes) is mostly rounding noise: not used.
TARGET_FROM_FRACTION_MIN = 0.01


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class ControllerInput:
    now_s: float                     # monotonic seconds (the module's clock)
    ratios: Ratios                   # the pool's current ratios (OSD map)
    fill: Optional[float]            # pool-level fill, fraction of target (agent arithmetic)
    dirty: Optional[float]           # pool-level dirty, fraction of target
    hit_set_period_s: int
    model: PoolModel                 # the law never reads its promote gate (the tuner
                                     # passes it pending: models.fit_pools_deferred)
    bounds: Bounds
    knobs: Knobs
    last_change_s: Optional[float]   # when tiertune last changed this pool (same clock)
    # Reasons the module already knows the controller must hold (stale
    # stats, degraded/misplaced/unfound objects, the notieragent flag, no
    # target_max_*); each a short sentence.
    hold_reasons: Sequence[str] = field(default_factory=tuple)
    # The pool's target_max_bytes (0 = unset).  With the model's headroom
    # and clean bytes and the fill/dirty fractions it gives the target in
    # bytes, which turns byte figures (burst size, inflow over the horizon)
    # into fractions of the target (see _target_bytes).
    target_max_bytes: int = 0
    # PGs in evict mode FULL (over 100% of their share: writes to objects
    # the cache lacks wait), from the latest sample.
    full_pgs: int = 0
    # False while the tier takes no new client writes or its agent never
    # acts (see tuner.blocks_matter): what the law wants is then moot, and
    # a hold says nothing of the bounds.
    blocks_matter: bool = True
    # Why no ratio may go up (the OSDs of the pool's rule filling: see
    # tuner._controller_input); None when they may.  Lowering still goes on.
    no_raise: Optional[str] = None


def _finite(x: Optional[float]) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _to_grid(t: Triple) -> Triple:
    g = RECOMMEND_GRID
    return (round(t[0] / g) * g, round(t[1] / g) * g, round(t[2] / g) * g)


def _size(b: float) -> str:
    for unit, scale in (('TiB', 2.0 ** 40), ('GiB', 2.0 ** 30), ('MiB', 2.0 ** 20),
                        ('KiB', 2.0 ** 10)):
        if abs(b) >= scale:
            return f'{b / scale:.1f} {unit}'
    return f'{b:.0f} B'


def _writes_wait(inp: ControllerInput, fill: Optional[float]) -> str:
    """Why writes wait for room (the law's writes_blocked), for a sentence:
    worded only when one says it, not every tick."""
    return (f'{inp.full_pgs} PG(s) FULL' if inp.full_pgs > 0
            else f'fill {_f(fill or 0.0)}') + ' (writes wait for room)'


def _relax_point(lo: float, hi: float) -> float:
    return lo + RELAX_POSITION * (hi - lo)


def _band_low(b: Optional[Band]) -> Optional[float]:
    """The conservative (low) end of a time prediction, or None."""
    if b is None:
        return None
    low = _finite(b.low)
    return low if low is not None else _finite(b.value)


def _target_bytes(inp: ControllerInput, fill: Optional[float],
                  dirty: Optional[float]) -> Optional[float]:
    """The target the agent's fractions are fractions of, in bytes (T).

    The agent judges a PG by the larger of its bytes and objects fractions,
    so the binding target is the smaller of target_max_bytes and
    target_max_objects x the average object size; the model's headroom is
    measured against that one (models.byte_budget).  With fill = user / T,
    dirty = dirty bytes / T:
      headroom = T - user         =>  T = headroom / (1 - fill)
      clean    = user - dirty b.  =>  T = clean / (fill - dirty)
    and T <= target_max_bytes when that is set.  Every estimate available is
    taken and the smallest kept: a smaller T makes bursts and inflow larger
    fractions, the conservative side.  None when none is available."""
    ev = inp.model.evict
    estimates: List[float] = []
    if inp.target_max_bytes > 0:
        estimates.append(float(inp.target_max_bytes))
    if fill is not None and fill < 1.0 - TARGET_FROM_FRACTION_MIN and ev.headroom_bytes > 0:
        estimates.append(float(ev.headroom_bytes) / (1.0 - fill))
    if (fill is not None and dirty is not None and fill - dirty > TARGET_FROM_FRACTION_MIN
            and ev.clean_bytes > 0):
        estimates.append(float(ev.clean_bytes) / (fill - dirty))
    return min(estimates) if estimates else None


@dataclass
class _RatioWhy:
    """Why the law wants a ratio where it does, for the reasons."""
    why: str = ''                    # the observation ('' = nothing to say)
    bound: str = ''                  # 'min' / 'max' when the law aims at a bound
    purpose: str = ''                # e.g. 'so flushing starts early'
    safety: bool = False             # about writes blocking: listed first
    say_if_kept: bool = False        # worth a sentence even when the ratio does not move


# reasons._ratio_sentences' stand-in for a ratio with no _RatioWhy (read only).
_NO_WHY = _RatioWhy()


@dataclass
class _Law:
    wanted: Triple                   # unclamped
    recommended: Ratios
    whys: Dict[str, _RatioWhy]
    blocks: List[str]
    notes: List[str]
    numbers: Dict[str, Any]


def _law(inp: ControllerInput) -> _Law:
    """The control law proper (bounds and knobs valid, model fitted)."""
    b, k, m = inp.bounds, inp.knobs, inp.model
    cd, ch, cf = _triple(inp.ratios)
    (dmin, dmax), (hmin, hmax), (fmin, fmax) = b.ranges()
    fill, dirty = _finite(inp.fill), _finite(inp.dirty)
    target = _target_bytes(inp, fill, dirty)
    short = max(_finite(m.inflow.short_bps) or 0.0, 0.0)
    evict = max(_finite(m.evict.evict_bps) or 0.0, 0.0)
    burst_seen = _finite(m.inflow.burst_bytes) if m.inflow.bursts_seen > 0 else None
    whys: Dict[str, _RatioWhy] = {}     # a ratio with nothing to say has none
    blocks: List[str] = []
    notes: List[str] = []
    # Writes wait for room: the inflow reads idle (nothing gets in), yet
    # nothing is idle.  Neither dirty_high nor full goes up meanwhile.
    writes_blocked = inp.full_pgs > 0 or (fill is not None and fill >= 1.0)
    nums: Dict[str, Any] = {
        'inflow_state': m.inflow.state,
        'inflow_short_bps': _finite(m.inflow.short_bps),
        'inflow_long_bps': _finite(m.inflow.long_bps),
        'idle_for_s': _finite(m.inflow.idle_for_s),
        'bursts_seen': m.inflow.bursts_seen,
        'evict_bps': evict,
        'fill': fill, 'dirty': dirty, 'full_pgs': inp.full_pgs,
        'target_bytes': target,
        'headroom_bytes': m.evict.headroom_bytes,
        'clean_bytes': m.evict.clean_bytes,
        'horizon_s': k.horizon_s,
    }
    if target is None:
        notes.append('the target in bytes is unknown (no target_max_bytes, and no clean '
                     'bytes/fill to derive it): burst fit and free room not judged')

    # Dirty data the agent cannot flush in time.  Net inflow (what eviction
    # does not already keep up with) over the horizon, or a typical burst if
    # larger; clean + free space (1 - dirty) must take it, or dirty_high
    # comes down so the PGs flush HIGH (below):
    #   reserve = max((short_bps - evict_bps) * horizon_s, burst_bytes)
    # Idle means no inflow now, whatever the short average still remembers
    # of the last burst (the model's predictions read it the same way).
    now_bps = 0.0 if m.inflow.state == 'idle' else short
    reserve = max(now_bps - evict, 0.0) * k.horizon_s
    if burst_seen is not None:
        reserve = max(reserve, burst_seen)
    needed: Optional[float] = None
    if target is not None:
        needed = min(1.0, reserve / target)
    # Room above the full ratio.  The agent evicts clean data above full,
    # with an effort that grows with the overshoot, and writes to uncached
    # objects block at 100%: (1 - full) of the target is what a write surge
    # has before clients wait on eviction.  A surge is a burst: the typical
    # one measured, or the current inflow for TYPICAL_BURST_S.  Not the
    # inflow over the horizon: eviction keeps up with a sustained inflow of
    # clean data, and judged by the evict rate of the moment (none while the
    # fill is under the full ratio, a lot just after lowering it) the room
    # flipped between none and most of the cache every rate-limit interval
    # under steady mixed IO (seen on the simulator: 0.68 <-> 0.78 each
    # minute, each change dropping the PGs' hit sets).
    # With no burst measured yet, the run in progress counts at its mean
    # rate if that is higher than the short average: once the cache
    # throttles a run's writes to the base's rate, the short average decays
    # while the run goes on, and read as a surge it would shrink under the
    # overflow line, and lower full, at the very end of a run that overran
    # the cache (osiris-rados-bench-4m-overflow's first bench, read as 0.85
    # of the target, took full to 0.7).
    run_bps = max(_finite(m.inflow.run_bps) or 0.0, 0.0)
    surge = burst_seen if burst_seen is not None else max(now_bps, run_bps) * TYPICAL_BURST_S
    room_needed: Optional[float] = None
    ceiling = 1.0
    overflows = False
    if target is not None:
        room_needed = min(1.0, surge / target)
        # A surge larger than all the cache can take (1 - dirty_ratio_min:
        # everything but the dirty floor) overruns it whatever full is, and
        # its writes end up waiting on the base either way.  No full ratio
        # makes room for it, so the room rule puts no ceiling on full; the
        # full rule below leaves full where it is (see there).
        overflows = surge / target > 1.0 - dmin + RATIO_EPS
        ceiling = 1.0 if overflows else 1.0 - room_needed
    nums.update(net_inflow_bps=max(now_bps - evict, 0.0), inflow_run_bps=run_bps,
                reserve_bytes=reserve,
                needed_free_fraction=needed, surge_bytes=surge,
                room_needed_fraction=room_needed, surge_overflows=overflows,
                full_ceiling=ceiling)

    # dirty_high: keep it; but when the cache is predicted to reach 100% of
    # its target within the horizon, and clean + free space (what eviction
    # alone can make room from: 1 - dirty) cannot take the reserve, flush
    # HIGH now: dirty_high just under the pool's dirty fraction.  The low
    # band of the prediction is used: acting early costs base bandwidth,
    # acting late blocks clients.
    ttf = _band_low(m.predictions.time_to_full_s)
    nums['time_to_full_low_s'] = ttf
    nums['time_to_dirty_high_low_s'] = _band_low(m.predictions.time_to_dirty_high_s)
    near_full = ttf is not None and ttf < k.horizon_s
    evictable = 1.0 - dirty if dirty is not None else None
    flush_bound = not (evictable is not None and needed is not None and evictable >= needed)
    nums['near_full'] = near_full
    want_h = ch
    lowest_h = max(hmin, dmin)            # the lowest dirty_high the bounds allow
    # Surges that overrun the cache (`overflows`, above) block writes
    # whatever the ratios; what the ratios still decide is how fast a FULL
    # PG opens room.  So dirty_high stays low for as long as the surges
    # seen overrun the cache, idle or not (lowered only once the next
    # surge starts, it took 20-30 s of a 60 s bench to get there): once
    # OVERRUN_LOW_LANDING of the target has landed on the drained cache,
    # the PGs flush HIGH, four ops in flight rather than two on each OSD with a PG in HIGH, and
    # the agent evicts fewer clean objects per completed flush than LOW
    # (4.2 against 4.8 at a clean share of 0.7, 2.2 against 2.8-3.3 at
    # 0.5; bench-results/cluster/agent-pacing.md), so clean data lasts
    # into the FULL spells.  dirty still drains to its floor in the rests.
    # On the local cluster (overflow-4m-fio-cluster, its second bench, the
    # first tiertune acts on; bench-results/cluster/overrun-rule.md)
    # dirty_high at its floor (0.3) gave p99 write 6.5 s against 8.6
    # without the rule (means of 4 and 5 runs); 0.4 was level with it there
    # and gains on the simulator where a surge only just overruns the
    # cache (bench-results/cluster/overrun-floor.md).  Holding dirty at the same
    # level as well lost on the cluster: it stops the rests' drain (31
    # MiB/s, p99 10.0 s).
    if overflows:
        want_h = max(lowest_h, dmin + OVERRUN_LOW_LANDING)
        at_floor = want_h <= lowest_h + RATIO_EPS
        whys['dirty_high'] = _RatioWhy(
            why=f'write surges of {_size(surge)} overrun the cache',
            bound='min' if at_floor and hmin >= dmin else '', safety=True, say_if_kept=True,
            purpose=(f'so PGs flush HIGH once {_f(want_h - dmin)} of the target has landed on '
                     f'a cache drained to dirty {_f(dmin)}: before, LOW flushing evicts more '
                     f'clean objects per flush (room opens fast); after, HIGH evicts fewer '
                     f'(clean data is the room a FULL PG opens at once)'))
    elif near_full:
        full_in = (f'cache predicted full in {ttf:.0f} s (low band), under the '
                   f'{k.horizon_s:.0f} s horizon')
        if not flush_bound:
            whys['dirty_high'] = _RatioWhy(
                why=f'{full_in}, but clean + free space ({_f(evictable or 0.0)} of target) '
                    f'covers the reserve ({_f(needed or 0.0)}): eviction suffices',
                say_if_kept=True)
        elif dirty is not None and dirty - HIGH_ENGAGE_MARGIN >= ch:
            whys['dirty_high'] = _RatioWhy(
                why=f'{full_in}; PGs already flush HIGH (dirty {_f(dirty)} over dirty_high '
                    f'{_f(ch)})', safety=True, say_if_kept=True)
        else:
            engage = max(dirty - HIGH_ENGAGE_MARGIN, 0.0) if dirty is not None else lowest_h
            want_h = min(ch, engage)
            at = (f'under dirty {_f(dirty)} - {_f(HIGH_ENGAGE_MARGIN)}' if dirty is not None
                  else 'as low as allowed (dirty level unknown)')
            whys['dirty_high'] = _RatioWhy(
                why=full_in, purpose=f'so PGs flush HIGH (twice the in-flight flush ops) before '
                                     f'writes block: dirty_high {at}',
                safety=True, say_if_kept=True)
            if want_h < lowest_h - k.deadband:
                which = 'dirty_high_ratio_min' if hmin >= dmin else 'dirty_ratio_min'
                blocks.append(f'{full_in}: tiertune wants dirty_high {_f(want_h)} (dirty '
                              f'{_f(dirty or 0.0)}) to flush hard, but {which} is '
                              f'{_f(lowest_h)}')
    elif m.inflow.state == 'idle' and not writes_blocked:
        # Recovery: without it a flush-hard lowering would stick for good
        # (bcache's 2013 rewrite: a controller that "throttled all the way
        # down" took "way too long to recover").  Only while writes are idle,
        # so raising it cannot bring the cache straight back to near-full.
        relax = _relax_point(hmin, hmax)
        if ch < relax - RATIO_EPS:
            want_h = relax
            whys['dirty_high'] = _RatioWhy(
                why=f'client writes idle for {_finite(m.inflow.idle_for_s) or 0.0:.0f} s '
                    f'and the cache is not filling',
                purpose='back to mid-range: flushing need not stay hard')
    if writes_blocked and want_h > ch + RATIO_EPS:
        # PGs over dirty_high flush HIGH, twice the agent's ops in flight,
        # and each flush makes a clean object to evict: raised now (the
        # overrun rule once the surge is measured), it would open the room
        # writes wait for slower.  The bounds still win (the clamp below).
        want_h = ch
        notes.append(f'{_writes_wait(inp, fill)}: dirty_high ratio not raised')
    h_law = _clamp(want_h, hmin, hmax)
    nums['wanted_dirty_high'] = want_h

    # dirty.  Burst fit, as fractions of the target T:
    #   burst = burst_bytes (or short_bps * burst length) / T
    #   fits  <=>  dirty_now + burst <= dirty_high - BURST_FIT_MARGIN
    # i.e. the whole burst lands dirty without taking the (average) PG to
    # HIGH, so the dirty ratio can go up and keep LOW flushing off meanwhile.
    state = m.inflow.state
    want_d = cd
    # The drain is for an idle base.  Clients whose IO the cache proxies
    # (or promotes from the base) dirty nothing, so the inflow reads idle,
    # but flushing more would take base bandwidth from them: hold instead.
    base_client = max(_finite(m.inflow.base_client_bps) or 0.0, 0.0)
    base_busy = base_client > idle_threshold_bps(max(_finite(m.inflow.long_bps) or 0.0, 0.0))
    nums.update(base_client_bps=base_client, base_busy=base_busy)
    if state == 'idle' and base_busy:
        whys['dirty'] = _RatioWhy(
            why=f'client writes into the cache idle for '
                f'{_finite(m.inflow.idle_for_s) or 0.0:.0f} s, but clients move '
                f'{_size(base_client)}/s through the base (proxied IO and promotions)',
            say_if_kept=True,
            purpose='(draining now would take base bandwidth from them)')
    elif state == 'idle':
        want_d = dmin
        whys['dirty'] = _RatioWhy(
            why=f'client writes idle for {_finite(m.inflow.idle_for_s) or 0.0:.0f} s',
            bound='min', say_if_kept=True,
            purpose='so the idle base drains dirty data ahead of the next burst')
    elif state == 'burst':
        burst_s = _finite(m.inflow.burst_seconds) or TYPICAL_BURST_S
        measured = _finite(m.inflow.burst_bytes)
        burst_b = measured if measured is not None else short * burst_s
        nums.update(burst_bytes=burst_b, burst_bytes_assumed=measured is None)
        burst_desc = (f'a typical write burst of {_size(burst_b)}' if measured is not None
                      else f'a write burst ({_size(short)}/s for ~{burst_s:.0f} s)')
        if writes_blocked:
            # Writes to objects the cache lacks wait while those to cached
            # ones land and read as a burst: it does not fit, whatever the
            # sums say, and a higher dirty ratio would defer the flushes
            # that make room.  Lowered, as for a burst that does not fit:
            # on an OSD with no PG flushing HIGH, more PGs flush LOW.
            # Before near_full, which a cache filling into FULL nearly
            # always is, and which keeps dirty where it is.
            want_d = dmin
            whys['dirty'] = _RatioWhy(
                why=f'{burst_desc} while {_writes_wait(inp, fill)}', bound='min',
                purpose='so flushing makes the room they wait for', say_if_kept=True)
        elif near_full:
            whys['dirty'] = _RatioWhy(
                why=f'{burst_desc} while the cache is predicted full in {ttf:.0f} s',
                purpose='(flushing is not deferred)', say_if_kept=True)
        elif target is None or dirty is None:
            whys['dirty'] = _RatioWhy(
                why=f'{burst_desc}, but its share of the target is unknown '
                    f'({"no target bytes" if target is None else "no dirty level"})',
                say_if_kept=True)
        else:
            frac = burst_b / target
            fits = dirty + frac <= h_law - BURST_FIT_MARGIN
            nums.update(burst_fraction=frac, burst_fits=fits)
            sums = (f'dirty {_f(dirty)} + {_f(frac)} {"<=" if fits else ">"} dirty_high '
                    f'{_f(h_law)} - {_f(BURST_FIT_MARGIN)}')
            if fits:
                want_d = dmax
                whys['dirty'] = _RatioWhy(
                    why=f'{burst_desc} ({_f(frac)} of target) fits ({sums})',
                    bound='max', say_if_kept=True,
                    purpose='so flushing does not compete with it')
            else:
                want_d = dmin
                whys['dirty'] = _RatioWhy(
                    why=f'{burst_desc} ({_f(frac)} of target) does not fit ({sums})',
                    bound='min', purpose='so flushing starts early',
                    say_if_kept=True)
    elif state != 'steady':
        notes.append(f"unknown inflow state '{state}': dirty ratio kept")
    d_law = _clamp(want_d, dmin, dmax)
    nums['wanted_dirty'] = want_d

    # full, within the ceiling.  The trade: every byte of room is a byte of
    # clean data not kept.  Clean data pays when hits grow with occupancy
    # (hit curve slope > 0): then as high as the room allows.  When they do
    # not, mid-range (more room, little lost).  With no curve, keep the
    # current value, lowered to the ceiling if the room requires it.
    hits = m.hits
    slope = _finite(hits.slope)
    r2 = _finite(hits.r2)
    nums.update(hit_ratio=_finite(hits.hit_ratio), hit_slope=slope, hit_r2=r2)
    if overflows:
        room = (f'a {_size(surge)} write surge is more than the cache holds above '
                f'dirty_ratio_min ({_f(1.0 - dmin)} of the target): no full ratio makes '
                f'room for it; ')
    elif room_needed is not None:
        room = f'room for a {_size(surge)} write surge needs {_f(room_needed)} of the target free; '
    else:
        room = ''
    no_curve = hits.too_thin or ('no slope' if slope is None else None)
    if no_curve is None and (r2 is None or r2 < HIT_CURVE_MIN_R2):
        no_curve = (f'the hit curve explains too little (r2 '
                    f'{"-" if r2 is None else f"{r2:.2f}"} < {HIT_CURVE_MIN_R2:g})')
    # A surge needing less room than the recommended grid can express
    # counts as none.  Clients must have used the cache lately (a hit ratio
    # over the recent window): a new, idle tier has seen no write surge
    # either, and raising full there meets the first write surge with
    # full at its ceiling, which the overrun rule then keeps (see there
    # for what that cost on the local cluster).
    clients_seen = _finite(hits.hit_ratio) is not None
    read_cache = (room_needed is not None and room_needed < RECOMMEND_GRID
                  and dirty is not None and dirty < READ_CACHE_DIRTY_MAX and clients_seen)
    nums['read_cache'] = read_cache
    if overflows:
        # Lowering full for such a surge would only evict, ahead of time,
        # clean data the surge evicts itself when it needs the room.
        # Raising it costs the median write: the agent evicts only past
        # full + slop, so a PG runs closer to its budget (at 0.9, 5 objects
        # of 64 below FULL; at 0.8, 12) and more writes meet it FULL.  On
        # the local cluster (bench-results/cluster/overrun-full.md) the law
        # that raised full to its maximum here had a median write 2.6x Ceph's
        # defaults' on exceeds-4m-fio (799 against 310 ms, bursts 2-3 of
        # three runs each) for no shorter tail; keeping full, 467 ms with
        # the tail level (10.1 against 10.6 s), and on overflow-4m-fio (its
        # second bench) 371 against 456 ms with the same tail (6.8 against
        # 6.5 s; the defaults' 9.3).  What shortens the tail is dirty_high
        # at its floor (above); an earlier reading that clean data kept is
        # room that opens faster (rados bench: 21.7 MiB/s with full 0.9,
        # 20.3 with 0.6) measured throughput, not the wait of a write.
        want_f = cf
        why = room.rstrip('; ')
        purpose = ('so it stays where it is (higher, PGs run closer to FULL and more '
                   'writes wait; lower only evicts early what the surge evicts anyway)')
    elif read_cache:
        # Room above full serves writes to objects the cache lacks (at 100%
        # of its share a PG blocks them); a plain read that misses a FULL PG
        # is proxied rather than promoted, and never blocks.  With no
        # writes the room serves nothing, and every byte of it is clean
        # data the hit curve would only argue about: it is slow to fit (fill
        # must vary) and a scan turns its slope negative.  On the simulator,
        # scan-pollutes-hot-set kept full 0.8 for its first 100 s, and went
        # back to mid-range after the scan, as the hot set returned.
        want_f = ceiling
        why = (f'clients use the cache, with no write surge seen and almost no dirty data '
               f'(dirty {_f(dirty or 0.0)}): a read cache')
        purpose = 'so it keeps as much clean data as allowed (room above full serves only writes)'
    elif no_curve is None and slope is not None:
        if slope > 0:
            want_f = ceiling
            why = f'{room}hits grow with occupancy (slope {slope:.2f})'
            purpose = 'so it keeps as much clean data as that room allows'
        else:
            want_f = min(ceiling, fmin + FULL_NO_PAYOFF_POSITION * (fmax - fmin))
            why = f'{room}hits do not grow with occupancy (slope {slope:.2f})'
            purpose = 'so it goes mid-range, leaving room for bursts'
    else:
        want_f = min(cf, ceiling)
        why = f'{room}no hit curve ({no_curve})'
        purpose = 'so it only comes down if the room requires it'
        if state == 'idle' and cf < _relax_point(fmin, fmax) - RATIO_EPS:
            # Recovery, as for dirty_high: lowered for room, back up to
            # mid-range (room permitting) once writes are idle.
            want_f = min(_relax_point(fmin, fmax), ceiling)
            if want_f > cf + RATIO_EPS:
                # Not when the room caps it under where it is: then it
                # comes down, as without the rule.
                purpose = 'and writes are idle, so it goes back up toward mid-range'
    whys['full'] = _RatioWhy(why=why, purpose=purpose, say_if_kept=overflows,
                             safety=ceiling < cf - RATIO_EPS)
    if room_needed is not None and not overflows and ceiling < fmin - k.deadband:
        blocks.append(f'room for a {_size(surge)} write surge needs full ratio '
                      f'{_f(ceiling)} ({_f(room_needed)} of the target free), but '
                      f'full_ratio_min is {_f(fmin)}')
    if writes_blocked and want_f > cf + RATIO_EPS:
        # Eviction effort grows with how far a PG is over its full ratio:
        # raised now, it would make room for the waiting writes slower.
        want_f = cf
        notes.append(f'{_writes_wait(inp, fill)}: full ratio not raised')
    f_law = _clamp(want_f, fmin, fmax)
    nums['wanted_full'] = want_f

    law = (d_law, h_law, f_law)
    rec = to_mon_grid(order_within(_to_grid(law), b.ranges()))
    for name, v in zip(NAMES, law):
        if abs(getattr(rec, name) - v) > RECOMMEND_GRID and whys.get(name, _NO_WHY).why:
            # Ordering moved it off the law's value (and off its bound).
            whys[name].bound = ''
            whys[name].purpose += (f' (held at {_f(getattr(rec, name))} to keep dirty <= '
                                   f'dirty_high <= full)')
    return _Law(wanted=(want_d, want_h, want_f), recommended=rec, whys=whys,
                blocks=blocks, notes=notes, numbers=nums)
