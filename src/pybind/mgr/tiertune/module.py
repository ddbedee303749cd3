"""tiertune: tune Ceph cache tiers' dirty, dirty-high and full ratios from the mgr.

This file is the mgr glue: options, the serve loop, persistence, health.
The data flow lives beside it, each step plain data in and out (as in
Kubernetes' Vertical Pod Autoscaler): topology and sampling (input), rates
and models (estimates), controller (recommendation), actuation and tuner
(updater); commands and report are the operator's view.
"""

import math
import threading
import time
from typing import Any, Deque, Dict, Iterable, List, Optional, Set, Tuple

from mgr_module import MgrModule, MonCommandFailed, NotifyType

from . import models, sample_store
from .actuation import pool_set_elsewhere
from .agent_config import agents_ops, with_agent_ops
from .commands import Commands
from .health import (
    BOUNDS_BLOCK_CLEAR_S,
    TICK_FAILURES_WARN,
    CheckHold,
    FullRiskHold,
    health_checks,
    tick_failed_check,
)
from .options import OPTION_NAMES, OPTIONS, within_bounds
from .progress import DRAIN_EVENT_MAX_S, Call, DrainEvents
from .rates import MIN_RATE_INTERVAL_S, HistoryBook
from .sampling import AgentLevels, agent_levels, take_samples
from .splits import (
    RECHECK_TICKS,
    SPLIT_SOURCE,
    SplitWatch,
    split_watch_from_store,
    with_invalid_stats,
)
from .state import (
    UNREADABLE,
    DecisionRecord,
    history_from_json,
    history_to_store,
    settings_from_store,
    settings_to_store,
)
from .tick_cost import StepClock, TickCosts
from .topology import (
    CacheTier,
    cache_tiers,
    cluster_flags,
    filling_osds,
    osds_filling_text,
    rule_osd_ids,
    up_in_osd_ids,
    with_fields,
)
from .tuner import Effects, PendingChange, Tuner

SETTINGS_KEY = 'state'
# Where stored settings that could not be read are copied at load, before
# the defaults that replace them are saved over the original.
UNREADABLE_SETTINGS_KEY = 'state.unreadable'
# mon_config_key_max_entry_size, 64 KiB by default.
SETTINGS_MAX_TEXT_BYTES = 64 * 1024
HISTORY_PREFIX = 'history/'
SAMPLES_PREFIX = 'samples/'
# The cache pools' pg_num as last seen, and the pools whose PGs are read
# for invalid stats (splits.SplitWatch).
SPLITS_KEY = 'splits'
# At most this many pools' samples are written per tick: the tick's cost
# is bounded (tools/bench/module_cost.py), and encoding a pool's 120
# samples costs 0.1 to 0.4 ms (less when most rows are cached from its last
# save).  At the defaults (30 s ticks, every 300 s) up to 10 cache pools
# keep to the interval; 64 are each saved every 32 minutes.
SAMPLES_SAVES_PER_TICK = 1


class Module(Commands, MgrModule):
    NOTIFY_TYPES = [NotifyType.osd_map]
    MODULE_OPTIONS = list(OPTIONS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shutdown = threading.Event()
        # Set to end the current wait early: on shutdown, and when options
        # or settings change (a shorter sleep_interval should not wait out
        # the old one; a new mode should act on the next tick).
        self._wake = threading.Event()
        self._lock = threading.RLock()
        self.sleep_interval = 30
        self.history_size = 120
        self.samples_save_interval = 300
        # Per option, the problem last warned of in the mgr log (see
        # _warn_option_once).
        self._option_warned: Dict[str, str] = {}
        # Per pool with samples in the store (written, or found at load),
        # when (monotonic) they were last written; -inf for a key found at
        # load that gave nothing to restore (due at once).
        self._samples_saved: Dict[int, float] = {}
        # Per pool, the overlay state stored with its samples (restored at
        # load; read by the first tick, which has no earlier tier to compare).
        self._restored_overlay: Dict[int, Optional[bool]] = {}
        self._sample_rows: Dict[int, sample_store.RowCache] = {}
        self._tiers: Dict[int, CacheTier] = {}
        self._flags: frozenset = frozenset()
        self._limits: Dict[int, models.PromoteLimits] = {}
        # Per cache pool, the OSD whose settings stand for its OSDs' (the
        # first of its CRUSH rule; read with the promote limits).
        self._agent_entities: Dict[int, str] = {}
        # Per cache pool, the OSDs its CRUSH rule can place data on (None
        # when the rule could not be read), as of the last OSD map.
        self._rule_osds: Dict[int, Optional[List[int]]] = {}
        # Set when an osd_map notification arrives: the topology is re-read
        # on the next tick only then, since get('osd_map') is the costliest
        # call the tick makes.
        self._osdmap_changed = threading.Event()
        self._osdmap_changed.set()
        self._book = HistoryBook(self.history_size)
        self._tuner = Tuner()
        self._drains = DrainEvents()
        # Pools whose dirty level this mgr has had (see _progress_calls).
        self._drains_looked_at: Set[int] = set()
        self._loaded = False
        self._health: Dict[str, Any] = {}
        # The checks of the last tick that ran to the end, and the ticks
        # failed since (count, wall time of the first).
        self._tick_checks: Dict[str, Any] = {}
        self._failed_ticks = 0
        self._failing_since = 0.0
        self._tick_costs = TickCosts()
        self._full_risk = FullRiskHold()
        self._bounds_block = CheckHold(BOUNDS_BLOCK_CLEAR_S)
        # Whether this mgr's PG stats were complete at some tick (see
        # _pg_stats_ready); once they were, they stay so for its life.
        self._pg_ready = False
        # Pools whose change the tick is making, its lock released (see _tick).
        self._changing: Set[int] = set()
        # Store writes taken under the lock, made after it (see _stage).
        self._staged: Dict[str, str] = {}
        self._store_lock = threading.Lock()
        # Counts the settings a command saved (_save_settings_locked): a
        # tick that read the OSD map before a command's save does not decide
        # on that map with the command's settings (see _tick).
        self._commands_saved = 0
        # Changed by the tick only, outside the lock (see _watch_splits).
        self._splits = SplitWatch()

    # ----- options and persistence ------------------------------------------------
    def config_notify(self) -> None:
        # The mgr calls this on every change to its config, any module's
        # option or a global one: a tick only for a change of ours.
        if self._read_options():
            self._wake.set()

    def _read_options(self) -> bool:
        """Read our options; whether any changed."""
        changed = False
        for name in OPTION_NAMES:
            # Held to its bounds before it is set: serve reads it from
            # another thread.
            try:
                value = self.get_module_option(name)
                held = within_bounds(name, value)
            except (TypeError, ValueError, ArithmeticError) as e:
                # A value the mgr cannot convert (`config set --force`
                # skips the mon's check): raised here, it would end serve.
                self._warn_option_once(name, f'unusable value ({e}): keeping '
                                             f'{getattr(self, name)}')
                continue
            if held != value:
                self._warn_option_once(name, f'{value} is outside its bounds: using {held}')
            else:
                self._option_warned.pop(name, None)
            changed = changed or held != getattr(self, name)
            setattr(self, name, held)
        # The lock only for a resize: a reset holds it over its mon
        # commands, and every config change of the cluster calls this.
        if self._book.size != int(self.history_size):
            with self._lock:
                if self._book.size != int(self.history_size):
                    self._book.resize(int(self.history_size))
        return changed

    def _warn_option_once(self, name: str, problem: str) -> None:
        # Once per value: config_notify runs on every config change in
        # the cluster, and the same warning each time buried the mgr log.
        if self._option_warned.get(name) != problem:
            self._option_warned[name] = problem
            self.log.warning('%s %s', name, problem)

    def _ensure_loaded(self) -> None:
        """For commands.  The mgr takes commands as soon as the module is
        loaded, which can be before the serve thread's first _load (right
        after a mgr start or failover): a command must act on the stored
        settings, not on the defaults, or its save would replace every
        other pool's settings with them."""
        with self._lock:
            if not self._loaded:
                self._read_options()    # the samples' window depends on them
                self._load()

    def _load(self, mono: Optional[float] = None, wall: Optional[float] = None) -> None:
        """Settings, decision history and samples from the store (the mgr's
        local copy: cheap).  Once, before the first tick or command needs
        them.  mono/wall: now (tests replay recorded times).  What cannot
        be read is logged and left out: the module starts whatever the
        store holds."""
        with self._lock:
            if self._loaded:
                return
            text = self.get_store(SETTINGS_KEY)
            self._tuner.settings, problems = settings_from_store(text)
            if problems:
                # Staged before the settings below, so written before them:
                # the original is never overwritten without its copy.
                self._stage(UNREADABLE_SETTINGS_KEY, text)
                for p in problems:
                    self.log.error('stored settings: %s', p)
                self.cluster_log('cluster', self.ClusterLogPrio.WARN,
                                 f'tiertune: stored settings partly unreadable '
                                 f'({"; ".join(problems)}); the original is kept in '
                                 f'mgr/tiertune/{UNREADABLE_SETTINGS_KEY}')
                # What was read, stored: otherwise every later load (each
                # failover) warned again, until something else saved them
                # (found by a review helper).  Staged, and written after
                # the lock (below) when the tick loads: status waits for
                # no mon round trip.
                self._stage_settings()
            for key, text in self.get_store_prefix(HISTORY_PREFIX).items():
                try:
                    pid = int(key[len(HISTORY_PREFIX):])
                    records, unreadable = history_from_json(text)
                except UNREADABLE as e:
                    self.log.warning('stored %s not used: %s: %s', key, type(e).__name__, e)
                    continue
                self._tuner.histories[pid] = records
                if unreadable:
                    self.log.warning('stored %s: %d of its decisions could not be read, left '
                                     'out', key, unreadable)
            self._restore_samples_locked(time.monotonic() if mono is None else mono,
                                         time.time() if wall is None else wall)
            self._splits, problems = split_watch_from_store(self.get_store(SPLITS_KEY))
            for p in problems:
                self.log.warning('%s', p)
            self._loaded = True
        self._write_staged()

    def _restore_samples_locked(self, mono: float, wall: float) -> None:
        """Each pool's samples as the last active mgr saved them, placed on
        this process's clock; those older than the window the history
        covers (history_size ticks) are left out.  A pool that is no longer
        a cache tier is forgotten (and its key removed) on the first tick."""
        window_s = float(self.history_size) * float(self.sleep_interval)
        for key, text in self.get_store_prefix(SAMPLES_PREFIX).items():
            try:
                pid = int(key[len(SAMPLES_PREFIX):])
            except ValueError:
                continue
            self._samples_saved[pid] = -math.inf
            self._restored_overlay[pid] = sample_store.stored_overlay(text)
            entries, problem = sample_store.decode(text, mono, wall, window_s)
            if problem:
                self.log.warning('pool %d: stored samples not used: %s', pid, problem)
                continue
            if entries:
                kept = self._book.restore(pid, entries, gap_follows=True)
                self._samples_saved[pid] = mono
                self.log.info('pool %d: %d samples restored from the store', pid, kept)

    def _save_settings_locked(self) -> None:
        """A command's save (the tick stages its own: _staging_effects)."""
        self._commands_saved += 1
        self._stage_settings()
        self._write_staged()

    def _stage_settings(self) -> None:
        text = settings_to_store(self._tuner.settings, SETTINGS_MAX_TEXT_BYTES)
        if len(text) > SETTINGS_MAX_TEXT_BYTES:
            # Thousands of pools with settings of their own: the mon would
            # refuse the value, and Pacific's set_store only logs it.
            self.log.error('stored settings are %d bytes, over the %d the mon takes: '
                           'the store keeps an older copy', len(text), SETTINGS_MAX_TEXT_BYTES)
        self._stage(SETTINGS_KEY, text)

    def _save_history(self, pool_id: int) -> None:
        self._stage_history(pool_id)
        self._write_staged()

    def _stage_history(self, pool_id: int) -> None:
        self._stage(f'{HISTORY_PREFIX}{pool_id}', history_to_store(self._tuner.history(pool_id)))

    def _stage(self, key: str, text: str) -> None:
        """A store write of key, taken now (under the lock: a later one of
        the same key replaces it), made by the next _write_staged."""
        with self._lock:
            self._staged[key] = text

    def _write_staged(self) -> None:
        """Write what is staged; on return, all staged before the call is
        written (by this thread, or by the one that took it first).  The
        store lock is taken as the writes are taken, under the module's
        lock (never the other way round), and held for them without it:
        writes are made in the order they were taken, so the store never
        goes back to an older text (a tick's, while a command wrote)."""
        with self._lock:
            staged, self._staged = self._staged, {}
            self._store_lock.acquire()
        try:
            for key, text in _settings_last(staged):
                self.set_store(key, text)
        finally:
            self._store_lock.release()

    def _pool_set(self, pool_id: int, pool: str, var: str, val: str) -> Optional[str]:
        try:
            reply = self.check_mon_command({'prefix': 'osd pool set', 'pool': pool, 'var': var,
                                            'val': val})
        except MonCommandFailed as e:
            return str(e)
        wrong = pool_set_elsewhere(pool_id, reply.stderr)
        if wrong is not None:
            self.log.error('osd pool set %s %s %s: %s', pool, var, val, wrong)
            self._audit(f'tiertune: osd pool set {pool} {var} {val}: {wrong}')
        return wrong

    def _audit(self, msg: str) -> None:
        self.cluster_log('audit', self.ClusterLogPrio.INFO, msg)

    def _effects(self) -> Effects:
        """A command's: it writes the store as it goes, under the lock.  A
        command runs on time.monotonic (the clock it passes Tuner.reset)."""
        return Effects(pool_set=self._pool_set, save_settings=self._save_settings_locked,
                       save_history=self._save_history, audit=self._audit,
                       log=self.log.info, log_error=self.log.exception,
                       clock=time.monotonic)

    def _staging_effects(self, real_clock: bool) -> Effects:
        """The tick's: what it would write is staged under the lock and
        written after it (_write_staged).  real_clock: the tick runs on
        time.monotonic (not at a time a test gives)."""
        return Effects(pool_set=self._pool_set, save_settings=self._stage_settings,
                       save_history=self._stage_history, audit=self._audit,
                       log=self.log.info, log_error=self.log.exception,
                       clock=time.monotonic if real_clock else None)

    # ----- the loop --------------------------------------------------------------
    def notify(self, notify_type: NotifyType, notify_id: str) -> None:
        if notify_type == NotifyType.osd_map:
            self._osdmap_changed.set()

    def serve(self) -> None:
        self.config_notify()
        self._wake.clear()   # config_notify wakes the loop; nothing to wake yet
        # The store is loaded by the first tick (or an earlier command),
        # inside the loop's guard: nothing stored can end the loop.
        self.log.info('tiertune starting: every %ss', self.sleep_interval)
        woken = False
        while not self._shutdown.is_set():
            try:
                self.tick(woken=woken)
            except Exception:
                # A bad tick must not end the loop: log it and try next time.
                self.log.exception('tiertune tick failed')
            woken = self._wake.wait(timeout=float(self.sleep_interval))
            self._wake.clear()
        self.log.info('tiertune stopped')

    def shutdown(self) -> None:
        self._shutdown.set()
        self._wake.set()
        super().shutdown()

    def tick(self, mono: Optional[float] = None, wall: Optional[float] = None,
             woken: bool = False) -> None:
        """Sample, fit, decide, act. mono/wall default to now (tests replay
        recorded times).  woken: a command or an option change cut the sleep
        short (see _sample_due_locked)."""
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        parts: Dict[str, float] = {}
        try:
            self._tick(mono, wall, parts, woken)
            # Set once the tick has run to the end, so a tick that fails
            # after its checks does not clear TIERTUNE_TICK_FAILED first.
            self._failed_ticks = 0
            self._set_health(self._tick_checks)
        except Exception as e:
            # The OSD map it may have read and not acted on: read again.
            self._osdmap_changed.set()
            self._tick_failed(e, time.time() if wall is None else wall)
            raise
        finally:
            cpu, took = time.thread_time() - cpu0, time.perf_counter() - wall0
            with self._lock:
                self._tick_costs.record(cpu, took, len(self._tiers), parts)

    def _pg_stats_ready(self) -> bool:
        """Whether every up OSD has reported to this mgr since it became
        active (the mgr's own test, which gives up waiting after a few
        stats periods).  Until then its pool_stats count the PGs no OSD has
        reported yet as zero (all of them, just after a failover): a rate
        measured from such a sample, with no stored sample before it, would
        count the pool's whole past IO as one interval's.  The mgr never
        goes back to not ready while active: asked only until it is."""
        if not self._pg_ready:
            self._pg_ready = bool(self.get('pg_ready').get('pg_ready', True))
            if not self._pg_ready:
                self.log.info('not every OSD has reported its PG stats to this mgr yet: '
                              'no samples this tick')
        return self._pg_ready

    def _tick(self, mono: Optional[float], wall: Optional[float],
              parts: Dict[str, float], woken: bool = False) -> None:
        """tick()'s work; parts gets the CPU seconds of its costly steps."""
        real_clock = mono is None
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        commands_saved = self._commands_saved   # before the cluster is read
        self._load(mono, wall)
        pools: Optional[Set[int]] = None   # every pool in the map, when it was read
        pool_max = -1
        if self._osdmap_changed.is_set():
            self._osdmap_changed.clear()
            osd_map = self.get('osd_map')
            tiers = cache_tiers(osd_map)
            pools = {int(p['pool']) for p in osd_map.get('pools', [])}
            # Ids only grow: a pool created since this map (a command may
            # have set it up meanwhile) has a larger one than pool_max.
            pool_max = int(osd_map.get('pool_max', max(pools, default=-1)))
            self._flags = cluster_flags(osd_map)
            self._limits = self._promote_limits(tiers, up_in_osd_ids(osd_map))
            filling = filling_osds(osd_map)
            tiers = {pid: with_fields(t, osds_filling=osds_filling_text(
                filling, self._rule_osds.get(pid))) for pid, t in tiers.items()}
        else:
            tiers = self._tiers
        clock = StepClock(parts)
        ready = self._pg_stats_ready()
        tiers, splits_text = self._watch_splits(tiers, pools is not None, ready, mono, clock)
        tiers = with_agent_ops(tiers, agents_ops(
            {pid: self._agent_entities.get(pid, 'osd') for pid in tiers}, self._osd_value))
        samples = take_samples(self.get, tiers, mono, wall) if ready else {}
        clock.mark('pool_stats')
        levels = {pid: agent_levels(tiers[pid], s.counters) for pid, s in samples.items()}
        acting = {pid: s.acting for pid, s in samples.items()}
        with self._lock:
            restarted = self._forget_across_overlay_changes_locked(tiers)
            if woken:
                samples = {pid: s for pid, s in samples.items()
                           if self._sample_due_locked(pid, mono)}
            self._tiers = tiers
            dirty_bytes = {pid: lv.dirty_bytes for pid, lv in levels.items()}
            for pid in self._book.record(samples, dirty_bytes, tiers.keys()):
                self.log.info('pool %d is no longer a cache tier; history dropped', pid)
            # The stored samples of pools whose history restarted go now,
            # not at the pool's turn to be saved: a restart before it would
            # bring back the samples from across the change.
            saves: Dict[str, Optional[str]] = {
                key: None for key in map(self._drop_saved_samples_locked, restarted)}
            saves.update(self._samples_to_save_locked(samples.keys(), tiers.keys(), mono))
            if pools is not None:
                saves.update(self._forget_deleted_pools_locked(pools, pool_max))
            if splits_text is not None:
                saves[SPLITS_KEY] = splits_text
            active = {pid: t for pid, t in tiers.items()
                      if self._tuner.settings.effective_mode(pid) != 'off'}
            # Each pool's newest decision record before the step: a record
            # after it is new (the history is bounded: its length stops
            # growing once full).
            before = {pid: _newest(self._tuner.history(pid)) for pid in active}
            clock.mark('history')
            staged = self._staging_effects(real_clock)
            changes: List[PendingChange] = []
            if self._commands_saved == commands_saved:
                changes = self._tuner.decide(active, self._book, sorted(self._flags),
                                             self._limits, float(self.sleep_interval), staged,
                                             mono, wall)
            else:
                # A command saved settings while this tick read the cluster
                # without the lock: `mode on` takes the ratios the pool has
                # then as tiertune's own, and the map read may predate a
                # change the operator made by hand just before it (adopted
                # from it, the next tick took the operator's ratio for a
                # hand change and set the pool to warn; found by a review
                # helper).  The samples are kept; the next tick, which the
                # command woke, decides on a map read after it.
                self._osdmap_changed.set()
            self._changing = {c.pid for c in changes}
            clock.mark('models_and_law')
        # The changes' commands without the lock: each `osd pool set` waits
        # for the mon, and a command of this module waiting for the lock
        # would hold up every module's commands (the mgr runs them all on
        # one thread).  Their plans are stored first (PlannedChange).
        try:
            try:
                self._write_staged()
                self._tuner.make_changes(changes, staged, self._lock)
            finally:
                with self._lock:
                    self._changing = set()
                self._write_staged()
            clock.mark('changes')
            with self._lock:
                checks = health_checks(active, self._tuner.views, self._tuner.settings,
                                       self._full_risk, mono, self._tuner.failures,
                                       (int(self.history_size), float(self.sleep_interval)),
                                       self._tuner.refusals, self._bounds_block)
                calls = self._progress_calls(active, levels, acting, before, mono, wall)
            self._tick_checks = checks
            self._send_progress(calls)
            clock.mark('health_progress')
        finally:
            # Also when a command raised: the samples were marked saved,
            # and a deleted pool's keys forgotten (found by a review helper).
            for key, text in saves.items():
                self.set_store(key, text)
        clock.mark('store')

    def _watch_splits(self, tiers: Dict[int, CacheTier], map_read: bool, pg_ready: bool,
                      mono: float, clock: StepClock
                      ) -> Tuple[Dict[int, CacheTier], Optional[str]]:
        """The tiers with their PGs' invalid stats as last read (see
        splits), reading them when due; and the watch to store, when it
        changed.  map_read: tiers are new from the OSD map; pg_ready: see
        _pg_stats_ready (until then the PGs not reported yet read as none).
        Commands take the counts from the tiers the tick keeps (self._tiers),
        which match its views."""
        watch = self._splits
        changed = watch.observe(tiers) if map_read else False
        if not watch.watching and not watch.invalid:
            # The steady state: nothing to read, no count to show (the
            # read that cleared the last one put the tiers' counts to 0).
            return tiers, watch.to_store() if changed else None
        with self._lock:
            shown = [pid for pid in tiers if self._tuner.settings.effective_mode(pid) != 'off']
        # Not while a pool's PG count moves (held for that anyway; a pgp_num
        # walk can take hours, and each read builds every PG): once it ends.
        looked_at = [pid for pid in shown if tiers[pid].pg_change is None]
        interval = float(self.sleep_interval)
        watch.reschedule(interval)
        if pg_ready and watch.due(looked_at, mono):
            try:
                changed = watch.read(self.get(SPLIT_SOURCE), tiers, mono, interval) or changed
            except Exception as e:
                watch.failed(looked_at, mono, interval)
                self.log.warning('PG stats not read for invalid stats after a split '
                                 '(tried again in %d s): %s: %s', RECHECK_TICKS * interval,
                                 type(e).__name__, e)
            clock.mark('pg_stats')
        return (with_invalid_stats(tiers, watch.shown(shown)),
                watch.to_store() if changed else None)

    def _sample_due_locked(self, pid: int, mono: float) -> bool:
        """Whether a tick a command woke keeps the pool's new sample: only
        once half a sleep_interval, and at least MIN_RATE_INTERVAL_S, has
        passed since its last (or when it has none).  A shorter interval
        spans fewer of the OSDs' stats reports (every 5 s) than the ticks'
        own, so its rates are mostly noise (its latest-interval figures,
        such as the base's client load, read 0 or a multiple), and each
        sample takes a place in the bounded history: a few dozen commands
        would cut its span by as many intervals."""
        hist = self._book.get(pid)
        newest = hist.latest if hist is not None else None
        # Never under MIN_RATE_INTERVAL_S: at sleep_interval 1 a sample kept
        # 0.5 s on had no rates, its interval's IO in none (a review helper).
        return newest is None or mono - newest.sample.mono >= max(float(self.sleep_interval) / 2,
                                                                  MIN_RATE_INTERVAL_S)

    def _forget_across_overlay_changes_locked(self, tiers: Dict[int, CacheTier]) -> List[int]:
        """Drop the samples of a tier whose base overlay came or went since
        the last tick: on one side of it the base's counters are the tier's
        proxied IO, on the other its clients' own, and the models' sums
        over the recent window would mix the two.  Returns the pools whose
        samples were dropped (their stored ones go too)."""
        dropped = []
        for pid, tier in tiers.items():
            before = self._tiers.get(pid)
            # On a new mgr's first tick, the overlay its samples were saved with.
            was = before.overlay if before is not None else self._restored_overlay.get(pid)
            if was is not None and was != tier.overlay and self._book.get(pid):
                self._book.forget(pid)
                dropped.append(pid)
                self.log.info('pool %s: base overlay %s; its samples start again', tier.pool,
                              'back' if tier.overlay else 'removed')
        self._restored_overlay.clear()
        return dropped

    def _drop_saved_samples_locked(self, pid: int) -> str:
        """Forget when a pool's samples were saved (so the next are due at
        once) and the rows cached for it; returns its store key."""
        self._samples_saved.pop(pid, None)
        self._sample_rows.pop(pid, None)
        return f'{SAMPLES_PREFIX}{pid}'

    def _samples_to_save_locked(self, sampled: Iterable[int], present: Iterable[int],
                                mono: float) -> Dict[str, Optional[str]]:
        """Store keys to write after this tick (None: remove): the samples
        of each pool not saved for samples_save_interval, and the keys of
        pools that are no longer cache tiers.  Written outside the lock:
        each is a blocking mon command."""
        out: Dict[str, Optional[str]] = {
            self._drop_saved_samples_locked(pid): None
            for pid in set(self._samples_saved) - set(present)}
        every = float(self.samples_save_interval)
        due = [pid for pid in sampled
               if mono - self._samples_saved.get(pid, -math.inf) >= every]
        # Longest unsaved first, a few a tick: with many cache pools the
        # writes (and their encoding) spread over ticks instead of all
        # landing on the mon, and on one tick, at once.
        due.sort(key=lambda pid: self._samples_saved.get(pid, -math.inf))
        for pid in due[:SAMPLES_SAVES_PER_TICK]:
            tier = self._tiers.get(pid)
            out[f'{SAMPLES_PREFIX}{pid}'] = sample_store.encode(
                self._book.saved_entries(pid), cache=self._sample_rows.setdefault(pid, {}),
                overlay=tier.overlay if tier is not None else None)
            self._samples_saved[pid] = mono
        return out

    def _forget_deleted_pools_locked(self, pools: Set[int],
                                     pool_max: int) -> Dict[str, Optional[str]]:
        """Drop the settings and decision history of pools the OSD map no
        longer has (deleted: Ceph never reuses a pool id), so that status
        and history stop showing them and the stored settings stop growing.
        Returns the store keys to remove.  A pool that is only no longer a
        cache tier keeps them: its tier may be back (cache mode none and
        writeback again) and its bounds with it."""
        t = self._tuner
        gone = sorted(pid for pid in (set(t.settings.pools) | set(t.histories)) - pools
                      if pid <= pool_max)
        for pid in gone:
            self.log.info('pool %d was deleted: its tiertune settings and history dropped', pid)
            t.histories.pop(pid, None)
            t.retry_after.pop(pid, None)
            t.refusals.pop(pid, None)
            t.own_changes.pop(pid, None)
        # Never emptied otherwise: it grew by each tier ever looked at, for
        # the mgr's life (found by a review helper).  Kept for a pool that
        # is only no longer a tier, as the rest: a drain is resumed only on
        # this mgr's first level of a pool.
        self._drains_looked_at = {pid for pid in self._drains_looked_at
                                  if pid in pools or pid > pool_max}
        removed = [t.settings.pools.pop(pid, None) for pid in gone]
        if any(ps is not None for ps in removed):
            # Written by the tick's _write_staged, without the lock: under
            # it, status would wait for the mon (found by a review helper).
            self._stage_settings()
        return {f'{HISTORY_PREFIX}{pid}': None for pid in gone}

    def _progress_calls(self, active: Dict[int, CacheTier], levels: Dict[int, AgentLevels],
                        acting: Dict[int, int], before: Dict[int, Optional[DecisionRecord]],
                        mono: float, wall: float) -> List[Call]:
        """acting: per pool sampled, its sample's (PoolSample.acting)."""
        dirty = {pid: levels[pid].dirty if pid in levels else None for pid in active}
        on = {pid: self._tuner.settings.effective_mode(pid) == 'on' for pid in active}
        self._drains.renamed({pid: tier.pool for pid, tier in active.items()})
        calls = self._drains.tick(dirty, on, mono, acting)
        for pid, tier in active.items():
            rec = _newest(self._tuner.history(pid))
            first = pid not in self._drains_looked_at and dirty.get(pid) is not None
            if first:
                self._drains_looked_at.add(pid)
            if rec is None or rec.mode != 'on' or rec.result != 'applied':
                continue
            if rec is not before.get(pid):
                calls += self._drains.started(pid, tier.pool, dirty.get(pid), rec.old.dirty,
                                              rec.new.dirty, mono, acting.get(pid, 0))
            elif (first and on[pid] and rec.new.dirty < rec.old.dirty
                  and 0 <= wall - rec.time < DRAIN_EVENT_MAX_S):
                # This mgr's first level of the pool: a drain the last one
                # started (its event went with it) is followed again.
                calls += self._drains.resumed(pid, tier.pool, dirty.get(pid), rec.new.dirty,
                                              mono - (wall - rec.time), acting.get(pid, 0))
        return calls

    def _send_progress(self, calls: List[Call]) -> None:
        for method, ev_id, kwargs in calls:
            if method == 'fail' and not self._progress_enabled():
                # The progress module's update and complete do nothing while
                # it is off, but its fail warns in the log of an event its
                # update never made.
                continue
            try:
                self.remote('progress', method, ev_id, **kwargs)
            except Exception as e:
                # progress disabled or failing: events are a courtesy, not a duty
                self.log.debug('progress %s %s: %s', method, ev_id, e)

    def _progress_enabled(self) -> bool:
        try:
            on = self.get_module_option_ex('progress', 'enabled', True)
        except Exception:
            return True     # unknown: as before, fail is sent and may warn
        return str(on).lower() not in ('false', '0')

    def _tick_failed(self, e: Exception, wall: float) -> None:
        if self._failed_ticks == 0:
            self._failing_since = wall
        self._failed_ticks += 1
        if self._failed_ticks >= TICK_FAILURES_WARN:
            self._set_health({**self._tick_checks, 'TIERTUNE_TICK_FAILED': tick_failed_check(
                self._failed_ticks, self._failing_since, f'{type(e).__name__}: {e}')})

    def _set_health(self, checks: Dict[str, Any]) -> None:
        """The one place health is set: the whole set, every tick, only when it changed."""
        if checks != self._health:
            self.set_health_checks(checks)
            self._health = checks

    def _promote_limits(self, tiers: Dict[int, CacheTier],
                        up_in: Set[int]) -> Dict[int, models.PromoteLimits]:
        """Per cache pool: the per-OSD promote throttle and how many OSDs
        apply it: those of its CRUSH rule that are up and in, and no more
        than its pg_num (only a PG's primary promotes).  The throttle as the mon's config database
        gives it to the first OSD of the pool's rule: a setting for the
        cache OSDs' device class (`osd/class:ssd`) or for one OSD applies
        (asked for plain `osd`, the mgr answers for osd.0, whatever its
        class).  Read on osd_map changes only: the CRUSH dump is O(OSDs)."""
        read: Dict[str, Tuple[float, float]] = {}

        def throttle(entity: str) -> Tuple[float, float]:
            if entity not in read:
                read[entity] = (self._osd_option(entity, 'osd_tier_promote_max_objects_sec',
                                                 25.0),
                                self._osd_option(entity, 'osd_tier_promote_max_bytes_sec',
                                                 5 * 1024 * 1024))
            return read[entity]

        try:
            crush = self.get_osdmap().get_crush().dump() if tiers else {}
        except Exception:
            crush = {}
        out = {}
        self._agent_entities = {}
        self._rule_osds = {}
        for pid, t in tiers.items():
            ids = self._rule_osds[pid] = rule_osd_ids(crush, t.crush_rule)
            entity = self._agent_entities[pid] = f'osd.{ids[0]}' if ids else 'osd'
            objects, nbytes = throttle(entity)
            osds = len(up_in.intersection(ids)) if ids else len(up_in)
            out[pid] = models.PromoteLimits(max_objects_sec_per_osd=objects,
                                            max_bytes_sec_per_osd=nbytes,
                                            osds=max(min(osds, t.pg_num), 1))
        return out

    def _osd_option(self, entity: str, key: str, default: float) -> float:
        v = self._osd_value(entity, key)
        return v if v is not None else default

    def _osd_value(self, entity: str, key: str) -> Optional[float]:
        """An OSD option as the mon's config database gives it to entity;
        None when it does not answer."""
        try:
            v = self.get_foreign_ceph_option(entity, key)
            return float(v) if v is not None else None
        except Exception:
            return None


def _settings_last(staged: Dict[str, str]) -> List[Tuple[str, str]]:
    """The staged writes in the order they were taken, the settings last: a
    tick's changes stage the settings (the plan cleared) before their
    history lines, and a failover between the writes lost the lines; the
    other way round the next mgr finds the plan and its line, and settles
    it without a second one (Tuner._settle_planned)."""
    return ([(k, v) for k, v in staged.items() if k != SETTINGS_KEY]
            + [(k, v) for k, v in staged.items() if k == SETTINGS_KEY])


def _newest(records: Deque[DecisionRecord]) -> Optional[DecisionRecord]:
    return records[-1] if records else None
