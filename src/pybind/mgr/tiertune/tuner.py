"""Per tick, per cache pool: fit, decide, and (in `on` mode) act.

The mgr is reached only through the Effects callbacks, so this runs the same
in ceph-mgr, in unit tests and in the simulator.
"""

import dataclasses
import errno
import time
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    ContextManager,
    Deque,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from . import actuation, controller, models
from .rates import HistoryBook, HistoryEntry
from .sampling import AgentLevels, PoolCounters, agent_levels
from .state import HISTORY_KEEP, DecisionRecord, PlannedChange, Settings, ratios_from_dict
from .stepping import same
from .topology import CacheTier, Ratios

# A sample older than this many ticks means the loop or the stats stalled:
# deciding on it would act on the past.
STALE_TICKS = 3
# Cache modes in which the tier takes no new objects (misses are proxied to
# the base, never promoted): Ceph's procedure to remove a writeback tier
# sets `proxy`, then flushes and evicts it all by hand.  Such a pool only
# drains, and a ratio change would add OSD map epochs (and reset the PGs'
# hit sets) under that procedure.
HOLD_CACHE_MODES = ('proxy', 'forward')
# After a failed `osd pool set`, wait this long before retrying, doubling
# up to the cap: a mon that refuses now (or is electing) is not hammered.
RETRY_BACKOFF_S = 30.0
# The error of a change whose pool left `on` while its commands ran: no
# refusal of the mon's (TIERTUNE_CHANGE_REFUSED does not count it).
STOPPED_NOT_ON = 'stopped: the pool is no longer in on mode'
RETRY_BACKOFF_MAX_S = 960.0
# Pools fitted together, then decided together (see Tuner.step).  A batch
# holds about ten new objects per pool for the garbage collector until its
# decisions replace the previous tick's views: with every pool in one batch
# that passed the collector's young-generation threshold (700 objects) at
# 64 cache pools, and it ran every tick (~1 ms per tick on average, ~50 ms
# when a full collection came).  Larger batches also spread the long-lived
# history objects in memory, and a full collection then takes longer (at 64
# cache pools after filling the histories: ~43 ms pool by pool, 45 with
# batches of 4, 48 of 8, 60 of 16), while the tick gains little past 8
# (medians 7.7, 7.4, 6.9, 6.7 ms).
FIT_BATCH = 8


@dataclass
class Effects:
    """What the tuner may do to the world."""
    # Run one `osd pool set POOL VAR VAL` for the pool of that id (the
    # command names the pool: the id is for checking the mon's reply); an
    # error message, or None.
    pool_set: Callable[[int, str, str, str], Optional[str]]
    save_settings: Callable[[], None]
    save_history: Callable[[int], None]
    audit: Callable[[str], None]
    log: Callable[[str], None] = print
    # A pool that could not be fitted or decided, called in the except
    # block (the module's logs the traceback; the simulator's raises).
    log_error: Callable[[str], None] = print
    # Now, on the monotonic clock the tick's or command's mono runs on,
    # after a change's commands: when it was made (OwnChange).  None where
    # commands take no time (the simulator, ticks replayed at recorded
    # times): the tick's own time.
    clock: Optional[Callable[[], float]] = None


@dataclass(frozen=True)
class PoolFailure:
    """A pool whose fit or decision raised, ticks in a row: it is left as
    it is (no view, no change) while the other pools are tuned."""
    error: str          # the latest, 'TypeName: message'
    since_wall: float   # the first tick of the run
    ticks: int


class PoolView:
    """What status/eval show for one pool after a tick.  The model's promote
    gate, which only they read, is computed the first time the model is
    (see models.DeferredGate); the health checks read its predictions
    without it."""

    def __init__(self, model: models.PoolModel, decision: controller.Decision, mode: str,
                 gate: Optional[Callable[[], models.PromoteGate]] = None) -> None:
        self._model = model
        self._gate = gate
        self.decision = decision
        self.mode = mode

    @property
    def model(self) -> models.PoolModel:
        if self._gate is not None:
            self._model = dataclasses.replace(self._model, promote=self._gate())
            self._gate = None
        return self._model

    @property
    def predictions(self) -> models.Predictions:
        return self._model.predictions

    @property
    def fitted(self) -> bool:
        return self._model.fitted


# The mgr receives the OSD maps of tiertune's own `osd pool set` commands
# a little after the mon has committed them (milliseconds, seconds on a
# busy mgr).  A map that still shows the ratios from before (or from part
# way through) a change this long after it was made has not lagged: the
# ratios were set back since, by someone else.
MAP_CATCH_UP_S = 20.0
# A change left planned (PlannedChange) is settled as tiertune's own only
# this long after it was made (wall clock): enough for a failover (the
# mon's beacon grace, 30 s, a new mgr's start and first tick).  Older, the
# mgr was down long enough for someone to have undone part of it by hand,
# which lands on an earlier step of the same path: then the usual
# hand-change rule decides (the safe side).
PLANNED_SETTLE_S = 300.0


@dataclass(frozen=True)
class OwnChange:
    """A change tiertune made to a pool, as OSD maps can show it: the ratios
    the pool had before it and after each `osd pool set` of it (each is an
    OSD map epoch of its own), and when it was made (monotonic)."""
    path: Tuple[Ratios, ...]
    at_mono: float

    def explains(self, ratios: Ratios, mono: float) -> bool:
        """Ratios a map shows that come from a map older than the change's
        last epoch, not from someone changing them since."""
        return (mono - self.at_mono < MAP_CATCH_UP_S
                and any(same(ratios, r) for r in self.path[:-1]))


def _after_commands(mono: float, eff: Effects) -> float:
    """When a change's commands had all returned, for its OwnChange: a mon
    that took over MAP_CATCH_UP_S to answer (an election) left a change
    stamped when it began read as a hand change once the map caught up
    (a tick's change, and a reset that stopped part way: the pool went to
    warn with "changed outside tiertune")."""
    return max(mono, eff.clock()) if eff.clock is not None else mono


@dataclass(frozen=True)
class PendingChange:
    """A change Tuner.decide planned: the pool as the tick saw it, the
    decision, its `osd pool set`s (planned_steps) and the tick's clocks."""
    pid: int
    tier: CacheTier
    decision: controller.Decision
    steps: Tuple['Step', ...]
    mono: float
    wall: float


@dataclass(frozen=True)
class ChangeResult:
    """What Tuner.run_change made: the ratios reached, the error that
    stopped it (None when all were set), and the ratios before and after
    each command sent."""
    reached: Ratios
    error: Optional[str]
    path: Tuple[Ratios, ...]


@dataclass(frozen=True)
class ChangeRefusals:
    """A pool's changes the mon refused, in a row: the latest error, and
    when the first of them was made (wall clock)."""
    count: int
    error: str
    since_wall: float


@dataclass
class Tuner:
    settings: Settings = field(default_factory=Settings)
    histories: Dict[int, Deque[DecisionRecord]] = field(default_factory=dict)
    views: Dict[int, PoolView] = field(default_factory=dict)
    retry_after: Dict[int, Tuple[float, float]] = field(default_factory=dict)  # mono, backoff
    # Per pool, its changes refused in a row (TIERTUNE_CHANGE_REFUSED);
    # in memory only, as retry_after.
    refusals: Dict[int, ChangeRefusals] = field(default_factory=dict)
    # Per pool, the models' arrays kept between ticks (see models.SeriesCache).
    series: Dict[int, models.SeriesCache] = field(default_factory=dict)
    # Per pool, tiertune's last change to it (see OwnChange).  In memory
    # only: a new mgr starts from a map newer than any change made.
    own_changes: Dict[int, 'OwnChange'] = field(default_factory=dict)
    # Per pool whose last tick's fit or decision raised (see PoolFailure).
    failures: Dict[int, PoolFailure] = field(default_factory=dict)

    def history(self, pool_id: int) -> Deque[DecisionRecord]:
        if pool_id not in self.histories:
            self.histories[pool_id] = deque(maxlen=HISTORY_KEEP)
        return self.histories[pool_id]

    def step(self, tiers: Mapping[int, CacheTier], book: HistoryBook, flags: Sequence[str],
             limits: Mapping[int, models.PromoteLimits], sleep_interval: float, eff: Effects,
             mono: float, wall: float) -> None:
        """decide, then make_changes: what a tick does, in one call (the
        simulator's and the unit tests' tick)."""
        self.make_changes(self.decide(tiers, book, flags, limits, sleep_interval, eff, mono,
                                      wall), eff)

    def make_changes(self, changes: Sequence['PendingChange'], eff: Effects,
                     guard: Optional[ContextManager[Any]] = None) -> None:
        """Run each change's commands, then record it (finish_change) inside
        guard: the module's lock, which the commands run without.  A change
        whose commands raise stays planned (a failover part way through is
        settled the same way); those after it are abandoned."""
        guard = nullcontext() if guard is None else guard
        for i, change in enumerate(changes):
            def still_on(pid: int = change.pid) -> bool:
                # A `mode` command may come while the commands wait for the
                # mon: no further command once the pool is not `on`.
                with guard:
                    return self.settings.effective_mode(pid) == 'on'
            try:
                result = self.run_change(change, eff, still_on)
            except BaseException:
                with guard:
                    for later in changes[i + 1:]:
                        self.abandon(later, eff)
                raise
            with guard:
                self.finish_change(change, result, eff)

    def decide(self, tiers: Mapping[int, CacheTier], book: HistoryBook, flags: Sequence[str],
               limits: Mapping[int, models.PromoteLimits], sleep_interval: float, eff: Effects,
               mono: float, wall: float) -> List['PendingChange']:
        """Fit and decide every pool; returns the changes to make, each
        planned (stored before its first command, see PlannedChange) but
        not made: run_change makes one, finish_change records it.  The
        module runs the commands without its lock (each is a mon round
        trip, and every mgr module's commands share one thread).  A pool
        whose fit or decision raises is left out (see PoolFailure): one
        pool's odd samples must not stop the tuning of every other."""
        per_pool: Tuple[Dict[int, Any], ...] = (self.views, self.series, self.failures,
                                                 self.refusals)
        for kept in per_pool:
            for pid in [p for p in kept if p not in tiers]:
                del kept[pid]
        pools = list(tiers.items())
        changes: List[PendingChange] = []
        for first in range(0, len(pools), FIT_BATCH):
            self._decide_batch(pools[first:first + FIT_BATCH], book, flags, limits,
                               sleep_interval, eff, mono, wall, changes)
        return changes

    def _decide_batch(self, pools: Sequence[Tuple[int, CacheTier]], book: HistoryBook,
                      flags: Sequence[str], limits: Mapping[int, models.PromoteLimits],
                      sleep_interval: float, eff: Effects, mono: float, wall: float,
                      changes: List['PendingChange']) -> None:
        jobs = [self._fit_job(pid, tier, book, limits) for pid, tier in pools]
        # The batch's models first, then its decisions: each step's code
        # runs for the batch's pools in a row (see models.fit_pools).
        # Fitting is pure, so the decisions and their effects come in the
        # same order, on the same models, as pool by pool.  The promote
        # gates wait until status or eval reads a model (see PoolView).
        fitted: Sequence[Optional[Tuple[models.PoolModel, models.DeferredGate]]]
        try:
            fitted = models.fit_pools_deferred(jobs)
        except Exception:
            # One pool's samples made an estimate raise: each pool of the
            # batch alone, so that only that one goes untuned.
            fitted = [self._fit_alone(pid, job, eff, wall)
                      for (pid, _), job in zip(pools, jobs)]
        for (pid, tier), job, fit in zip(pools, jobs, fitted):
            if fit is None:
                self._watch_unfitted(pid, tier, eff, mono, wall)
                continue
            try:
                change = self._decide_pool(pid, tier, job, fit, flags, sleep_interval, eff,
                                           mono, wall)
            except Exception as e:
                self._failed(pid, e, eff, wall)
                continue
            self.failures.pop(pid, None)
            if change is not None:
                changes.append(change)

    def _fit_alone(self, pid: int, job: models.FitJob, eff: Effects, wall: float
                   ) -> Optional[Tuple[models.PoolModel, models.DeferredGate]]:
        """The pool's fit, or None when it raises (recorded: _failed).  A
        pool whose SeriesCache the batch already brought up to its history
        is not changed again (update follows by entry identity)."""
        try:
            return models.fit_pools_deferred([job])[0]
        except Exception as e:
            self._failed(pid, e, eff, wall)
            return None

    def _watch_unfitted(self, pid: int, tier: CacheTier, eff: Effects, mono: float,
                        wall: float) -> None:
        """What needs no model, for a pool in `on` that could not be fitted:
        a change a failover cut short is settled within PLANNED_SETTLE_S
        (later, its steps would read as a hand change once the pool is
        fitted again), and a hand change is noticed (respected, as for any
        pool in `on`)."""
        if self.settings.effective_mode(pid) != 'on':
            return
        try:
            self._notice_manual_change(pid, tier, eff, mono, wall)
        except Exception:
            # The pool is already recorded as failed this tick, its error
            # logged: an error here too adds nothing for the operator.
            pass

    def _failed(self, pid: int, e: Exception, eff: Effects, wall: float) -> None:
        """A pool's fit or decision raised (called in the except block).
        Its view goes (status must not show an old decision as this
        tick's), and its arrays: the next tick rebuilds them whole from the
        history, so an update cut short leaves nothing behind.  Logged when
        the error is new, not every tick it repeats."""
        self.views.pop(pid, None)
        self.series.pop(pid, None)
        error = f'{type(e).__name__}: {e}'
        was = self.failures.get(pid)
        if was is None or was.error != error:
            eff.log_error(f'pool {pid}: could not be fitted or decided ({error}); '
                          f'it is left as it is, the other pools are tuned')
        self.failures[pid] = PoolFailure(error, was.since_wall if was else wall,
                                         was.ticks + 1 if was else 1)

    def _decide_pool(self, pid: int, tier: CacheTier, job: models.FitJob,
                     fit: Tuple[models.PoolModel, models.DeferredGate], flags: Sequence[str],
                     sleep_interval: float, eff: Effects, mono: float,
                     wall: float) -> Optional['PendingChange']:
        """One pool's decision on its model, and its change when in `on`."""
        model, gate = fit
        mode = self.settings.effective_mode(pid)
        if mode == 'on':
            self._notice_manual_change(pid, tier, eff, mono, wall)
            mode = self.settings.effective_mode(pid)
        if mode == 'on':
            self._adopt(pid, tier, eff, mono)
        self._last_change_not_ahead(pid, eff, wall)
        # The newest entry's levels, as fit_pools computed them; the
        # model's promote gate pending: the law does not read it.
        inp = self._controller_input(pid, tier, model, self.series[pid].levels,
                                     job.history, flags, sleep_interval, mono, wall)
        decision = controller.decide(inp)
        self.views[pid] = PoolView(model, decision, mode, gate)
        if mode == 'on' and decision.action == 'change':
            return self._plan(pid, tier, decision, eff, mono, wall)
        return None

    def _controller_input(self, pid: int, tier: CacheTier, model: models.PoolModel,
                          levels: Optional[AgentLevels], entries: Sequence[HistoryEntry],
                          flags: Sequence[str], sleep_interval: float, mono: float,
                          wall: float) -> controller.ControllerInput:
        ps = self.settings.pool(pid)
        holds = hold_reasons(tier, entries, flags, sleep_interval, mono)
        if self._map_behind_own_change(pid, tier, mono):
            # A tick a command woke can come before the OSD map shows the
            # last change: planned from these ratios, a change would leave
            # out each ratio already where it goes in them, and record as
            # set what the pool never has (found by a review helper, with
            # min_interval_s 0 and no hit sets: nothing else waits then).
            holds.append(f'the OSD map does not show tiertune\'s last change yet (it has '
                         f'{fmt(tier.ratios)})')
        return controller.ControllerInput(
            now_s=mono, ratios=tier.ratios,
            fill=levels.fill if levels else None, dirty=levels.dirty if levels else None,
            # The rate limit waits a hit-set period because a change
            # resets the PGs' hit sets; a pool without any loses none.
            hit_set_period_s=tier.hit_set.period_s if tier.hit_set.active else 0,
            model=model, bounds=ps.bounds, knobs=ps.knobs,
            # A wall clock stepped back would put the change in the
            # future; count it as now rather than hold until then (a
            # tick moves it to now: _last_change_not_ahead).
            last_change_s=(mono - max(wall - ps.last_change_wall, 0.0)
                           if ps.last_change_wall is not None else None),
            hold_reasons=tuple(holds),
            target_max_bytes=tier.target_max_bytes,
            full_pgs=entries[-1].sample.counters.num_evict_mode_full if entries else 0,
            blocks_matter=blocks_matter(tier),
            # Raised, full (or dirty, kept from eviction) puts more data on
            # OSDs the mon already warns of; lowered, the agent evicts more.
            no_raise=(f'OSDs of its CRUSH rule are filling ({tier.osds_filling})'
                      if tier.osds_filling else None))

    def evaluate(self, pid: int, tier: CacheTier, book: HistoryBook, flags: Sequence[str],
                 limits: Mapping[int, models.PromoteLimits], sleep_interval: float,
                 mono: float, wall: float) -> PoolView:
        """What a tick would decide for one pool now: on the samples held,
        with the tier as given (the OSD map now, not at the last tick: a
        target or ratio set since shows at once) and the settings now.
        Nothing is applied or kept; the pool's views and caches are left
        as the last tick made them.  The mode is the one the tick would
        act in: `on` turns to `warn` after a change made by hand."""
        hist = book.get(pid)
        entries: Sequence[HistoryEntry] = hist.entries if hist else ()
        # A fit of its own from the whole history (no SeriesCache: the
        # tick's views of the pool's arrays stay valid).
        model = models.fit(entries, tier, limits.get(pid, models.DEFAULT_LIMITS),
                           not_current=hist.not_current() if hist else None)
        levels = agent_levels(tier, entries[-1].sample.counters) if entries else None
        inp = self._controller_input(pid, tier, model, levels, entries, flags,
                                     sleep_interval, mono, wall)
        mode = self.settings.effective_mode(pid)
        if (mode == 'on' and self._set_before_a_hand_change(pid, tier, mono) is not None
                and self._planned_reached(pid, tier, wall) is None):
            mode = 'warn'
        return PoolView(model, controller.decide(inp), mode)

    def _planned_reached(self, pid: int, tier: CacheTier, wall: float) -> Optional[Ratios]:
        """The step of the pool's planned change its ratios are at, if any
        (and the plan is recent enough to settle): a change under way (its
        commands sent, not yet recorded) or one a failover cut short, which
        the next tick takes as tiertune's own (_settle_planned)."""
        planned = self.settings.pool(pid).planned
        if planned is None or wall - planned.wall >= PLANNED_SETTLE_S:
            return None
        return planned.reached(tier.ratios)

    def _set_before_a_hand_change(self, pid: int, tier: CacheTier,
                                  mono: float) -> Optional[Ratios]:
        """What tiertune last set (or took over), when the pool's ratios now
        differ from it (someone changed them by hand); else None, also when
        the OSD map is older than tiertune's own last change (OwnChange)."""
        applied = self.settings.pool(pid).last_applied
        if applied is None or same(applied, tier.ratios):
            return None
        return None if self._map_behind_own_change(pid, tier, mono) else applied

    def _map_behind_own_change(self, pid: int, tier: CacheTier, mono: float) -> bool:
        own = self.own_changes.get(pid)
        return own is not None and own.explains(tier.ratios, mono)

    def _adopt(self, pid: int, tier: CacheTier, eff: Effects, mono: float) -> None:
        """A pool in `on` mode that tiertune has not changed since it took
        control (first `on`, or `on` again after a hand change or a reset):
        the ratios it has now are the ones a later hand change is told
        from.  Without this a hand change before tiertune's first own
        change would be taken back, not respected."""
        ps = self.settings.pool(pid)
        if ps.last_applied is None and not self._map_behind_own_change(pid, tier, mono):
            ps.last_applied = tier.ratios
            eff.save_settings()

    def _last_change_not_ahead(self, pid: int, eff: Effects, wall: float) -> None:
        """A last change recorded after now (the wall clock stepped back, or
        the mgr that made it ran ahead of this one) is moved to now, once:
        the rate limit then counts from here.  Counted as now on every tick
        instead, it held the pool until the clocks met (an hour of skew, an
        hour of holds: found by a review helper)."""
        ps = self.settings.pools.get(pid)
        if ps is not None and ps.last_change_wall is not None and ps.last_change_wall > wall:
            ps.last_change_wall = wall
            eff.save_settings()

    def _fit_job(self, pid: int, tier: CacheTier, book: HistoryBook,
                 limits: Mapping[int, models.PromoteLimits]) -> models.FitJob:
        hist = book.get(pid)
        # The deque itself: fit() reads it by index near its ends.
        entries: Sequence[HistoryEntry] = hist.entries if hist else ()
        cache = self.series.get(pid)
        if cache is None:
            cache = self.series[pid] = models.SeriesCache()
        return models.FitJob(entries, tier, limits.get(pid, models.DEFAULT_LIMITS), cache,
                             hist.not_current() if hist else None)

    def _notice_manual_change(self, pid: int, tier: CacheTier, eff: Effects,
                              mono: float, wall: float) -> None:
        """A ratio that differs from what tiertune last set was changed by
        someone else: respect it.  The pool goes to `warn` (tiertune keeps
        recommending, never overrides) until the operator says `on` again."""
        self._settle_planned(pid, tier, eff, wall)
        applied = self._set_before_a_hand_change(pid, tier, mono)
        if applied is None:
            return
        ps = self.settings.pool(pid)
        # applied is what tiertune set, or took over at `on` without a change
        # of its own: "had set" was wrong for the second (seen on the demo).
        # The resume command is added where the note is shown, under the
        # pool's name then (report.with_resume): a rename would leave it
        # naming a pool that no longer exists.
        ps.manual_change = (f'ratios changed outside tiertune to {fmt(tier.ratios)} (tiertune had '
                            f'them at {fmt(applied)}, as it set or took them over) at '
                            f'{time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(wall))}'
                            f'; pool set to warn')
        ps.mode = 'warn'
        ps.last_applied = None
        said = f'{ps.manual_change}: `ceph tiertune mode {tier.pool} on` resumes'
        eff.log(f'{tier.pool}: {said}')
        eff.audit(f'tiertune: pool {tier.pool}: {said}')
        eff.save_settings()

    def _settle_planned(self, pid: int, tier: CacheTier, eff: Effects, wall: float) -> None:
        """A change still planned at a tick was cut short by a mgr failover
        or crash (the mgr that made it clears it when done): ratios on its
        path are what tiertune set, and the rest of it is not made (the next
        decision starts from where the pool is)."""
        ps = self.settings.pool(pid)
        planned = ps.planned
        if planned is None:
            return
        if same(tier.ratios, planned.path[0]) and wall - planned.wall < MAP_CATCH_UP_S:
            # No command shows yet: the map may be behind a command made
            # (an in-flight one from the old mgr, or one before an error).
            return
        reached = self._planned_reached(pid, tier, wall)
        ps.planned = None
        if reached is not None and not (ps.last_applied and same(ps.last_applied, reached)):
            ps.last_applied = tier.ratios
            ps.last_change_wall = planned.wall
            whole = same(reached, planned.path[-1])
            if self._recorded(pid, planned):
                # The mgr that made it stored its history line, then failed
                # over before the settings that clear the plan (finish_change
                # writes them in that order): the line and its audit are
                # there already.
                eff.log(f'{tier.pool}: change of {fmt(planned.path[0])} -> '
                        f'{fmt(planned.path[-1])} was recorded, its settings not: '
                        f'taken as tiertune\'s own')
                eff.save_settings()
                return
            how = ('made, but not recorded before a mgr failover or restart' if whole else
                   f'stopped at {fmt(tier.ratios)} (cut short by a mgr failover or restart, '
                   f'or an error, during the change)')
            msg = (f'tiertune: pool {tier.pool}: {fmt(planned.path[0])} -> '
                   f'{fmt(planned.path[-1])} {how}: taken as tiertune\'s own')
            eff.audit(msg)
            eff.log(msg)
            # The mgr that made it could not record it: without this line
            # `tiertune history` lacked a change the pool shows.
            self.history(pid).append(DecisionRecord(
                time=planned.wall, pool=tier.pool, mode='on', old=planned.path[0],
                new=planned.path[-1], reason='(the reasons were lost with the mgr that made it)',
                result='applied' if whole else f'incomplete: stopped at {fmt(reached)} by a '
                                               f'mgr failover or restart, or an error'))
            eff.save_history(pid)
        eff.save_settings()

    def _recorded(self, pid: int, planned: PlannedChange) -> bool:
        """The pool's newest history line is the planned change's (a line
        has the wall time its plan was stored with)."""
        history = self.histories.get(pid)
        return history is not None and len(history) > 0 and history[-1].time == planned.wall

    def _plan(self, pid: int, tier: CacheTier, decision: controller.Decision, eff: Effects,
              mono: float, wall: float) -> Optional['PendingChange']:
        retry = self.retry_after.get(pid)
        if retry and mono < retry[0]:
            return None
        ps = self.settings.pool(pid)
        if ps.baseline is None:
            ps.baseline = tier.ratios
        # Stored before the first command, so a mgr that takes over part
        # way through knows the ratios it finds are tiertune's (PlannedChange).
        steps = planned_steps(tier.ratios, decision.next)
        ps.planned = planned_change(tier.ratios, steps, wall)
        eff.save_settings()
        return PendingChange(pid, tier, decision, tuple(steps), mono, wall)

    @classmethod
    def run_change(cls, change: 'PendingChange', eff: Effects,
                   go_on: Callable[[], bool] = lambda: True) -> 'ChangeResult':
        """The change's commands, each sent only while go_on(); reads and
        changes no tuner state."""
        path: List[Ratios] = []
        reached, err = cls.apply_ratios(change.pid, change.tier.pool, change.tier.ratios,
                                        change.steps, eff, path, go_on)
        return ChangeResult(reached, err, tuple(path))

    def finish_change(self, change: 'PendingChange', result: 'ChangeResult',
                      eff: Effects) -> None:
        pid, tier, decision = change.pid, change.tier, change.decision
        mono, wall = change.mono, change.wall
        reached, err = result.reached, result.error
        ps = self.settings.pool(pid)
        reason = '; '.join(decision.reasons) or 'controller decision'
        ps.planned = None
        if not same(reached, tier.ratios):
            # Even a part of the batch changed the pool (and reset its PGs'
            # hit sets): it counts for the rate limit, and is what tiertune
            # last set, so it is not taken for a hand change.
            ps.last_applied = reached
            ps.last_change_wall = wall
            ps.manual_change = None
            self.own_changes[pid] = OwnChange(result.path, _after_commands(mono, eff))
            eff.audit(f'tiertune: pool {tier.pool}: {fmt(tier.ratios)} -> {fmt(reached)}: '
                      f'{reason}' + ('' if err is None else f' (incomplete: {err})'))
        retry = self.retry_after.get(pid)
        if err is None:
            self.retry_after.pop(pid, None)
            self.refusals.pop(pid, None)
            outcome = 'applied'
        else:
            backoff = min((retry[1] * 2) if retry else RETRY_BACKOFF_S, RETRY_BACKOFF_MAX_S)
            self.retry_after[pid] = (mono + backoff, backoff)
            if err != STOPPED_NOT_ON:
                was = self.refusals.get(pid)
                self.refusals[pid] = ChangeRefusals(was.count + 1 if was else 1, err,
                                                    was.since_wall if was else wall)
            # Part of it made counts as a change: the rate limit holds the
            # rest too (the line said 30 s, and the retry came 600 s on).
            partly = '' if same(reached, tier.ratios) else (
                ', or once the rate limit allows: part of it was made')
            if err == STOPPED_NOT_ON:
                # No retry: the pool is not in `on` now (a review helper:
                # the line promised one that never came).
                outcome = (f'failed: {err}' + ('' if same(reached, tier.ratios) else
                                                f'; part of it was made ({fmt(reached)})'))
            else:
                outcome = f'failed: {err} (retry in {backoff:.0f}s{partly})'
            eff.log(f'{tier.pool}: change failed: {err}')
        self.history(pid).append(DecisionRecord(time=wall, pool=tier.pool, mode='on',
                                                old=tier.ratios, new=decision.next,
                                                reason=reason, result=outcome))
        # The history first: a failover between the two writes leaves the
        # plan stored with the change's line, and the next mgr settles the
        # plan without a second line (_settle_planned); the other way round,
        # the line was lost.
        eff.save_history(pid)
        eff.save_settings()

    def abandon(self, change: 'PendingChange', eff: Effects) -> None:
        """A planned change none of whose commands was sent (an earlier one
        of the tick raised): not planned any more."""
        self.settings.pool(change.pid).planned = None
        eff.save_settings()

    @staticmethod
    def apply_ratios(pid: int, pool: str, current: Ratios, steps: Sequence['Step'], eff: Effects,
                     path: Optional[List[Ratios]] = None,
                     go_on: Callable[[], bool] = lambda: True) -> Tuple[Ratios, Optional[str]]:
        """Run the commands of steps (planned_steps from current: in an
        order that keeps dirty <= dirty_high <= full after every one).
        Stops at the first failure (each prefix is a valid state).  Returns
        the ratios reached and the error, if any; path, if given, gets
        current and the ratios after each command."""
        reached = current
        if path is not None:
            path.append(current)
        for var, value, after in steps:
            if not go_on():
                return reached, STOPPED_NOT_ON
            err = eff.pool_set(pid, pool, var, f'{value:.6f}')
            if err is not None:
                return reached, f'osd pool set {pool} {var} {value:.6f}: {err}'
            reached = after
            if path is not None:
                path.append(after)
        return reached, None

    def forget_refusals(self, pids: Iterable[int]) -> None:
        """The operator acted on these pools (mode, reset): the next change
        is tried without waiting out an old backoff, and refusals count
        again from it."""
        for pid in pids:
            self.retry_after.pop(pid, None)
            self.refusals.pop(pid, None)

    def reset(self, pid: int, tier: CacheTier, eff: Effects, wall: float,
              mono: float) -> Tuple[int, str]:
        """Restore the baseline ratios and return the pool to warn."""
        self.forget_refusals([pid])
        ps = self.settings.pool(pid)
        if ps.baseline is None:
            ps.mode = 'warn'
            eff.save_settings()
            # A reset clears the baseline: after one, "never changed" read
            # as if the history beside it were wrong (an operator review).
            if any(r.mode == 'reset' for r in self.histories.get(pid, ())):
                return 0, (f'pool {tier.pool}: already reset, and not changed by tiertune '
                           f'since (no baseline); mode set to warn')
            return 0, (f'pool {tier.pool}: tiertune never changed it (no baseline); '
                       f'mode set to warn')
        baseline = ps.baseline
        # The mgr's OSD map can be older than tiertune's own last change
        # (OwnChange): the pool then has what tiertune set, and a plan from
        # the map's ratios would leave some of that in place.
        # Its last step, not last_applied: `mode <pool> on` clears that, and
        # a reset then planned from the map sent nothing, said "restored"
        # and dropped the baseline (a review helper).
        own = self.own_changes.get(pid)
        current = (own.path[-1] if own is not None and own.explains(tier.ratios, mono)
                   else tier.ratios)
        path: List[Ratios] = []
        steps = planned_steps(current, baseline)
        # As a tick's change: a mgr that takes over part way through finds
        # tiertune's own ratios, not a hand change (PlannedChange).
        ps.planned = planned_change(current, steps, wall)
        # warn before the first command, as reset promises: a mgr that takes
        # over part way through does not go on tuning from where it stopped.
        mode_before, ps.mode = ps.mode, 'warn'
        eff.save_settings()
        reached, err = self.apply_ratios(pid, tier.pool, current, steps, eff, path)
        ps.planned = None
        moved = not same(reached, current)
        if moved:
            self.own_changes[pid] = OwnChange(tuple(path), _after_commands(mono, eff))
        if err is not None:
            ps.mode = mode_before
            if moved:
                # Part of the way back: recorded as tiertune's own change,
                # so the next tick does not take it for a hand change.
                ps.last_applied = reached
                ps.last_change_wall = wall
                self.history(pid).append(DecisionRecord(
                    time=wall, pool=tier.pool, mode='reset', old=current, new=baseline,
                    reason='tiertune reset: baseline restored', result=f'failed: {err}'))
                eff.audit(f'tiertune: pool {tier.pool}: reset {fmt(current)} -> '
                          f'{fmt(baseline)} (baseline) stopped at {fmt(reached)}: {err}')
                eff.save_history(pid)
            eff.save_settings()
            return -errno.EIO, f'reset of {tier.pool} failed: {err}'
        self.history(pid).append(DecisionRecord(time=wall, pool=tier.pool, mode='reset',
                                                old=current, new=baseline,
                                                reason='tiertune reset: baseline restored',
                                                result='reset'))
        eff.audit(f'tiertune: pool {tier.pool}: reset {fmt(current)} -> '
                  f'{fmt(baseline)} (baseline); mode warn')
        ps.mode = 'warn'
        ps.last_applied = None
        ps.manual_change = None
        ps.baseline = None   # taken again if tiertune takes control again
        if moved:
            # It reset the PGs' hit sets as any change does: `mode on`
            # right after it waits out the rate limit.
            ps.last_change_wall = wall
        eff.save_history(pid)    # before the settings, as in finish_change
        eff.save_settings()
        return 0, f'pool {tier.pool}: ratios restored to {fmt(baseline)}; mode warn'


# OSD map flags that stop client IO (`ceph osd pause` sets both), and
# what waits with each: the agent's flushes are writes to the base, its
# promotions reads from it (Objecter::target_should_be_paused).
PAUSE_FLAGS = {'pauserd': "client reads and the agent's promotions",
               'pausewr': "client writes and the agent's flushes"}


def hold_reasons(tier: CacheTier, entries: Sequence[Any], flags: Sequence[str],
                 sleep_interval: float, mono: float) -> List[str]:
    reasons = []
    if 'notieragent' in flags:
        reasons.append('the notieragent flag is set: no tier agent runs, ratios have no effect')
    for flag, what in PAUSE_FLAGS.items():
        if flag in flags:
            # Client IO stops, so the pool reads idle, and it is not.
            reasons.append(f'the {flag} flag is set: {what} wait')
    if tier.agent_stopped:
        reasons.append(f'the tier agent of its OSDs may run no ops ({tier.agent_stopped}): it '
                       f'neither flushes nor evicts, and the ratios have no effect')
    if tier.base_full:
        reasons.append(f'base pool {tier.base_pool} is full (quota or OSDs): flushes cannot '
                       f'land, and writes through the tier wait')
    change = tier.pg_change
    if change:
        # The agent judges each PG by target / pg_num: its levels move
        # with the count, and PGs move between OSDs.
        reasons.append(f'its PG count is changing ({change})')
    if tier.invalid_stats_pgs:
        reasons.append(f'{tier.invalid_stats_pgs} of its PGs have had no scrub since a PG '
                       f'split: the tier agent neither flushes nor evicts on them until they '
                       f'are scrubbed (ceph osd pool scrub {tier.pool}); the ratios do not '
                       f'act there')
    if not tier.has_target:
        reasons.append('no target_max_bytes/objects: the agent never flushes or evicts '
                       '(set one; tiertune does not)')
    if tier.cache_mode in HOLD_CACHE_MODES:
        reasons.append(f'cache_mode {tier.cache_mode}: the tier takes no new objects (it is '
                       f'bypassed, or drained to be removed)')
    if not tier.overlay:
        # Its figures would read every client op as proxied (the base's
        # own IO): the promote advice and the busy-base test go wrong too.
        reasons.append(f'no overlay: pool {tier.base_pool} sends its clients '
                       f'{tier.clients_go}, not to this tier (osd tier set-overlay '
                       f'{tier.base_pool} {tier.pool})')
    if not entries:
        reasons.append('no sample yet')
        return reasons
    age = mono - entries[-1].sample.mono
    if age > STALE_TICKS * sleep_interval:
        reasons.append(f'stats are stale: the latest sample is {age:.0f}s old')
    latest = entries[-1].sample
    unclean = _unclean(latest.counters)
    if unclean:
        reasons.append(f'not all objects are clean ({unclean})')
    # The base too: recovery there is no client IO, so the base reads idle
    # and the law would drain into it, each flush to a degraded object
    # waiting for its recovery and competing with the backfill.
    unclean = _unclean(latest.base) if latest.base is not None else None
    if unclean:
        reasons.append(f'not all objects of base pool {tier.base_pool} are clean ({unclean})')
    return reasons


def blocks_matter(tier: CacheTier) -> bool:
    """Whether what the bounds forbid the law is worth a health warning
    while the pool holds.  Not for a tier that takes no new client writes
    (proxy or forward mode, no overlay) or whose agent never acts (no
    target): the surge room the law wants comes from writes before, and
    such a tier is most often being drained to be removed (seen on the
    demo: `osd tier cache-mode proxy` raised TIERTUNE_BOUNDS_BLOCK)."""
    return tier.cache_mode not in HOLD_CACHE_MODES and tier.overlay and tier.has_target


def _unclean(c: PoolCounters) -> Optional[str]:
    """The pool's degraded, misplaced and unfound objects, when it has any."""
    if c.num_objects_degraded or c.num_objects_misplaced or c.num_objects_unfound:
        return (f'{c.num_objects_degraded} degraded, {c.num_objects_misplaced} misplaced, '
                f'{c.num_objects_unfound} unfound')
    return None


VAR_RATIO = {var: name for name, var in actuation.POOL_VARS.items()}


def fmt(r: Ratios) -> str:
    return f'{r.dirty:.2f}/{r.dirty_high:.2f}/{r.full:.2f}'


# One `osd pool set` of a change: the pool variable, its value, and the
# pool's ratios after it.
Step = Tuple[str, float, Ratios]


def planned_change(current: Ratios, steps: Sequence[Step], wall: float) -> PlannedChange:
    """The change steps (planned_steps from current) make, as it is stored
    before its first command."""
    return PlannedChange((current, *(after for _, _, after in steps)), wall)


def planned_steps(current: Ratios, target: Ratios) -> List[Step]:
    """The commands of actuation.plan from current to target, each with
    the ratios it leaves."""
    state = current.as_dict()
    steps = []
    for var, value in actuation.plan(current, target):
        state[VAR_RATIO[var]] = value
        steps.append((var, value, ratios_from_dict(state)))
    return steps
