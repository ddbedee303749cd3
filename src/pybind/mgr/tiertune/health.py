"""The module's health checks, computed in one place from a tick's results."""

import math
from typing import Any, Dict, Hashable, List, Mapping, Optional, Tuple

from .law import TYPICAL_BURST_S
from .models import FIT_MIN_SAMPLES, FIT_MIN_WINDOW_S
from .predictions import Band
from .report import fmt_bytes, fmt_wall
from .state import FOLLOW_DEFAULT, Settings
from .topology import CacheTier
from .tuner import RETRY_BACKOFF_MAX_S, ChangeRefusals, PoolFailure, PoolView

# Ticks that fail in a row before it is raised: one failure can be a mon
# election or a stats report in the middle of an update; three at the
# default 30 s interval are a loop that no longer tunes.
TICK_FAILURES_WARN = 3
# Changes the mon refuses in a row before TIERTUNE_CHANGE_REFUSED: one can
# be a mon election; three span the first backoffs (30 + 60 s and more),
# and the pool keeps its ratios meanwhile while status says `on`.
CHANGE_REFUSALS_WARN = 3


# A pool's TIERTUNE_CACHE_FULL_RISK stays raised until no tick has raised
# it for this long.  Under a steady or bursty overrun the prediction comes
# and goes with single ticks: on the simulator the check was raised 16 to
# 19 times in the 900 s of steady-write-above-backend and 13 to 15 times
# over bursty-write-exceeds' four bursts (tools/bench/full_risk_check.py,
# seeds 0 and 1), and each raise and clear is a HEALTH_WARN/HEALTH_OK flip
# and a cluster log line.  Five minutes spans a few of the default 30 s
# ticks and the gaps between such surges, and is short beside the
# default 600 s horizon the check looks over.
FULL_RISK_CLEAR_S = 300.0
# The same for TIERTUNE_BOUNDS_BLOCK.  Both of the law's rules behind it
# read the inflow of the moment, and at the default 30 s tick one interval
# without writes (a stats report late, a pause of the clients) reads idle:
# the block cleared for that tick and came back on the next (a review
# helper, on steady writes: 4 raises and clears in 5 ticks).
BOUNDS_BLOCK_CLEAR_S = 300.0


class CheckHold:
    """The last time (the tick's monotonic clock) and detail line a
    pool's check was raised, and what it was raised under (settings the
    operator's remedy changes), to keep it raised for clear_s after.  A
    change to those drops it at once: the operator's remedy shows on the
    next tick.  Not persisted: a new mgr raises it again on its own first
    fitted tick."""

    def __init__(self, clear_s: float = FULL_RISK_CLEAR_S) -> None:
        self.clear_s = clear_s
        self.last: Dict[int, Tuple[float, str, Hashable]] = {}

    def hold(self, now: Mapping[int, str], present: Mapping[int, Hashable],
             mono: float) -> Dict[int, str]:
        """The pools' detail lines to raise: those raised now, and those
        raised within clear_s that are still looked at (in present, under
        the same settings)."""
        out = dict(now)
        for pid, (t, line, under) in list(self.last.items()):
            if pid in now:
                continue
            if pid not in present or present[pid] != under or mono - t >= self.clear_s:
                del self.last[pid]
            else:
                out[pid] = (f'as of {_seconds(mono - t)} ago: {line} (cleared once '
                            f'{_seconds(self.clear_s)} pass without)')
        for pid, line in now.items():
            self.last[pid] = (mono, line, present.get(pid))
        return out


# The full-risk check's (the name the bench tools use).
FullRiskHold = CheckHold


def _check(summary: str, detail: List[str]) -> Dict[str, Any]:
    return {'severity': 'warning', 'summary': summary, 'count': len(detail), 'detail': detail}


def _seconds(s: float) -> str:
    # A band's slow edge is infinite when the inflow's spread exceeds its mean.
    return f'{s:.0f}s' if math.isfinite(s) else 'never'


def why_writes_would_block(numbers: Mapping[str, Any]) -> Optional[str]:
    """Why the pool's write surges would take its PGs to 100% of their
    target whatever the ratios, from the law's figures (law._law's
    numbers), or None: the surge is more than the cache holds above the
    dirty floor (the law's overrun; the agent makes room by evicting clean
    data only).  The surge is the law's: the typical burst seen, or before
    one is seen the current inflow over TYPICAL_BURST_S.

    Without this the full-risk check extrapolated the fill's growth over
    the horizon, eviction ignored: on the simulator it was raised in all
    six shipped scenarios in which no write ever blocked, reads alone
    included (promotions fill the cache up to the full ratio, where
    eviction holds it), on 7-46% of their time
    (tools/bench/full_risk_check.py).  A surge that does not fit beside the
    dirty data of the moment was tried as a second cause: it was raised
    at the end of every burst of bursty-write-fits, whose dirty data then
    drains before the next, and added no blocked second to those warned."""
    surge, target = numbers.get('surge_bytes'), numbers.get('target_bytes')
    if not surge or not target or not numbers.get('surge_overflows'):
        return None
    what = (f'the typical write surge ({fmt_bytes(surge)})' if numbers.get('bursts_seen')
            else f'the write surge under way ({fmt_bytes(surge)} if it lasts '
                 f'{TYPICAL_BURST_S:.0f} s)')
    return f'{what} is more than the cache holds above its dirty floor'


def predicted_full(view: PoolView, horizon_s: float) -> Optional[Band]:
    """The predicted time to 100% of the target, when under horizon_s and
    from a fitted model (as the controller acts only on one: on a history
    shorter than FIT_MIN_WINDOW_S one skewed stats report dominates, and
    the check came and went with the first burst a new, or newly enabled,
    module saw); else None."""
    ttf = view.predictions.time_to_full_s     # (view.model would compute the promote gate)
    return ttf if view.fitted and ttf is not None and ttf.value < horizon_s else None


def health_checks(tiers: Mapping[int, CacheTier], views: Mapping[int, PoolView],
                  settings: Settings, hold: Optional[FullRiskHold] = None,
                  mono: float = 0.0,
                  failures: Optional[Mapping[int, PoolFailure]] = None,
                  history: Optional[Tuple[int, float]] = None,
                  refusals: Optional[Mapping[int, ChangeRefusals]] = None,
                  block_hold: Optional[CheckHold] = None) -> Dict[str, Any]:
    """TIERTUNE_NO_TARGET, TIERTUNE_AGENT_STOPPED, TIERTUNE_SPLIT_UNSCRUBBED,
    TIERTUNE_CACHE_FULL_RISK, TIERTUNE_BOUNDS_BLOCK, TIERTUNE_POOL_FAILED,
    TIERTUNE_CHANGE_REFUSED and TIERTUNE_HISTORY_TOO_SHORT for the pools
    tiertune looks at (mode warn or on).  hold: the module's FullRiskHold,
    with the tick's monotonic time (mono), keeps a pool's full-risk check
    raised FULL_RISK_CLEAR_S after its last raise.  failures: the tuner's,
    by pool.  history: the history_size and sleep_interval options.
    refusals: the tuner's, by pool (raised for pools in `on` only).
    block_hold: the module's hold of TIERTUNE_BOUNDS_BLOCK, as hold
    (BOUNDS_BLOCK_CLEAR_S; dropped at once when the pool's bounds or
    targets change)."""
    no_target: List[str] = []
    failed: List[str] = []
    full_risk: Dict[int, str] = {}
    blocked: Dict[int, str] = {}
    unscrubbed: List[str] = []
    stopped: List[str] = []
    refused: List[str] = []
    by_name = sorted(tiers.items(), key=lambda kv: kv[1].pool)
    for pid, tier in by_name:
        refusal = (refusals or {}).get(pid)
        if (refusal is not None and refusal.count >= CHANGE_REFUSALS_WARN
                and settings.effective_mode(pid) == 'on'):
            # A pool that follows the default `on`: `mode <pool> on` would
            # pin it, and a later `mode off` would no longer stop it.
            own = settings.pools[pid].mode if pid in settings.pools else None
            retry = 'on' if own else FOLLOW_DEFAULT
            refused.append(
                f'pool {tier.pool}: the mon refused its last {refusal.count} changes, since '
                f'{fmt_wall(refusal.since_wall)}: {refusal.error}; its ratios stay as they '
                f'are, and tiertune tries again after a backoff of up to '
                f'{RETRY_BACKOFF_MAX_S / 60:.0f} min (`ceph tiertune mode {tier.pool} {retry}` '
                f'tries at once)')
        if tier.agent_stopped:
            stopped.append(
                f'pool {tier.pool}: {tier.agent_stopped} in the config database: the tier '
                f'agent neither flushes nor evicts, so the pool fills and writes to objects '
                f'it lacks block (ceph config dump | grep osd_agent_max)')
        elif tier.agent_limited:
            stopped.append(f'pool {tier.pool}: {tier.agent_limited} (ceph config dump | grep '
                           f'osd_agent_max)')
        if tier.invalid_stats_pgs:
            unscrubbed.append(
                f'pool {tier.pool}: {tier.invalid_stats_pgs} of its PGs have had no scrub since '
                f'a PG split: its agent neither flushes nor evicts on them, so their dirty '
                f'data stays and they grow past their share of the target, toward filling '
                f'the OSDs (ceph osd pool scrub {tier.pool})')
        if not tier.has_target:
            no_target.append(f'pool {tier.pool} has no target_max_bytes/objects: its agent '
                             f'never flushes or evicts, so it grows until its OSDs fill'
                             + (', where client writes block' if tier.takes_client_writes else ''))
        failure = (failures or {}).get(pid)
        if failure is not None and failure.ticks >= TICK_FAILURES_WARN:
            failed.append(pool_failed_line(tier.pool, failure))
        view = views.get(pid)
        if view is None:
            continue
        horizon = settings.pool(pid).knobs.horizon_s
        ttf = predicted_full(view, horizon)
        if ttf is not None:
            why = why_writes_would_block(view.decision.numbers)
            if why is not None:
                full_risk[pid] = (f'pool {tier.pool} is predicted to reach 100% of its target '
                                  f'(where writes block) in {_seconds(ttf.value)} (band '
                                  f'{_seconds(ttf.low)} to {_seconds(ttf.high)}), under the '
                                  f'{horizon:.0f}s horizon: {why}')
        if view.decision.bounds_block:
            blocked[pid] = f'pool {tier.pool}: {view.decision.bounds_block}'
    if block_hold is not None:
        # Only pools tiertune looks at: a pool turned off drops it at once,
        # as does one set to proxy or forward to be drained (no surge to
        # make room for).
        bounds_under = {pid: (t.cache_mode, t.target_max_bytes, t.target_max_objects,
                              settings.pool(pid).bounds) for pid, t in tiers.items()
                        if settings.effective_mode(pid) != 'off'}
        blocked = block_hold.hold(blocked, bounds_under, mono)
    if hold is not None:
        under = {pid: (t.target_max_bytes, t.target_max_objects,
                       settings.pool(pid).knobs.horizon_s,
                       settings.pool(pid).bounds.dirty_ratio_min) for pid, t in tiers.items()}
        full_risk = hold.hold(full_risk, under, mono)
    risky = [full_risk[pid] for pid, _ in by_name if pid in full_risk]
    checks: Dict[str, Any] = {}
    if stopped:
        checks['TIERTUNE_AGENT_STOPPED'] = _check(
            f'{len(stopped)} cache pool(s) whose OSDs\' tier agent op limits are 0', stopped)
    if unscrubbed:
        checks['TIERTUNE_SPLIT_UNSCRUBBED'] = _check(
            f'{len(unscrubbed)} cache pool(s) with PGs left idle by a split until scrubbed',
            unscrubbed)
    if no_target:
        checks['TIERTUNE_NO_TARGET'] = _check(
            f'{len(no_target)} cache pool(s) without target_max_bytes/objects', no_target)
    if risky:
        checks['TIERTUNE_CACHE_FULL_RISK'] = _check(
            f'{len(risky)} cache pool(s) predicted to fill within the horizon (now or in '
            f'the last {FULL_RISK_CLEAR_S / 60:.0f} min)', risky)
    if blocked:
        lines = [blocked[pid] for pid, _ in by_name if pid in blocked]
        checks['TIERTUNE_BOUNDS_BLOCK'] = _check(
            f'{len(lines)} cache pool(s) need a change their tiertune bounds forbid'
            + (f' (now or in the last {BOUNDS_BLOCK_CLEAR_S / 60:.0f} min)'
               if block_hold is not None else ''), lines)
    too_short = history_too_short(*history) if history and tiers else None
    if too_short:
        checks['TIERTUNE_HISTORY_TOO_SHORT'] = _check(
            'tiertune keeps too short a history to fit any pool: nothing is tuned', [too_short])
    if refused:
        checks['TIERTUNE_CHANGE_REFUSED'] = _check(
            f'{len(refused)} cache pool(s) in on mode whose changes the mon refuses', refused)
    if failed:
        checks['TIERTUNE_POOL_FAILED'] = _check(
            f'{len(failed)} cache pool(s) tiertune cannot fit or decide: left as they are',
            failed)
    return checks


def history_too_short(history_size: int, sleep_interval: float) -> Optional[str]:
    """Why no pool can ever be fitted under these options, or None: a full
    history holds history_size - 1 intervals with rates, spanning that
    many sleep_intervals, and a model needs FIT_MIN_SAMPLES of them
    spanning FIT_MIN_WINDOW_S.  The options' own ranges allow less."""
    rated, span = history_size - 1, (history_size - 1) * sleep_interval
    if rated >= FIT_MIN_SAMPLES and span >= FIT_MIN_WINDOW_S:
        return None
    need = max(FIT_MIN_SAMPLES + 1, math.ceil(FIT_MIN_WINDOW_S / max(sleep_interval, 1e-9)) + 1)
    return (f'history_size {history_size} at sleep_interval {sleep_interval:g}s holds '
            f'{rated} interval(s) spanning {span:g}s; the models need {FIT_MIN_SAMPLES} '
            f'spanning {FIT_MIN_WINDOW_S:g}s: set history_size to at least {need}')


def pool_failed_line(pool: str, failure: PoolFailure) -> str:
    return (f'pool {pool}: every tick since {fmt_wall(failure.since_wall)} ({failure.ticks}) '
            f'failed to fit or decide it: {failure.error} (the mgr log has the traceback); '
            f'its ratios are left as they are, the other pools are tuned')


def tick_failed_check(failures: int, since_wall: float, error: str) -> Dict[str, Any]:
    """TIERTUNE_TICK_FAILED: the loop has failed `failures` ticks in a row,
    the first at since_wall; error is the latest.  The tick's own checks
    stay as the last tick that ran left them."""
    # The count in the detail, not the summary: the mon logs a check whose
    # summary changed ("Health check update"), one cluster log line a tick.
    return _check(f'tiertune has failed {TICK_FAILURES_WARN} or more ticks in a row: it is '
                  f'not tuning',
                  [f'every tick since {fmt_wall(since_wall)} failed ({failures}); the latest: '
                   f'{error} (the mgr log has the traceback; the other tiertune checks are as '
                   f'the last good tick left them)'])
