"""The tuner (fit, decide, act) on real recorded samples, with the mgr's
effects faked: what it would send as `osd pool set`, save and audit."""

import dataclasses
import errno
from typing import List, Optional, Tuple

import pytest

from conftest import RecordingGetter, force_change, same_value
from tiertune.controller import Decision
from tiertune.rates import HistoryBook
from tiertune.sampling import agent_levels, take_samples
from tiertune.topology import Ratios, cache_tiers
from tiertune.tuner import Effects, Tuner, hold_reasons


class FakeMgr:
    def __init__(self, fail_on: Optional[str] = None) -> None:
        self.sets: List[Tuple[str, str, str]] = []
        self.audits: List[str] = []
        self.saved = 0
        self.saved_history: List[int] = []
        self.fail_on = fail_on

    def pool_set(self, pid: int, pool: str, var: str, val: str) -> Optional[str]:
        if self.fail_on == var:
            return 'Error EPERM: refused'
        self.sets.append((pool, var, val))
        return None

    def effects(self) -> Effects:
        return Effects(pool_set=self.pool_set, save_settings=self._save,
                       save_history=self.saved_history.append, audit=self.audits.append,
                       log=lambda m: None)

    def _save(self) -> None:
        self.saved += 1


def replay(burst):
    tiers = cache_tiers(burst['samples'][0]['inputs']['osd_map'])
    book = HistoryBook(200)
    for rec in burst['samples']:
        s = take_samples(RecordingGetter(rec['inputs']), tiers, rec['mono'], rec['wall'])
        book.record(s, {p: agent_levels(tiers[p], x.counters).dirty_bytes
                        for p, x in s.items()}, tiers)
    last = burst['samples'][-1]
    return tiers, book, last['mono'], last['wall']


def step(tuner, burst, mgr, mono_offset=0.0):
    tiers, book, mono, wall = replay(burst)
    tuner.step(tiers, book, [], {}, 3.0, mgr.effects(),
               mono + mono_offset, wall + mono_offset)
    return tiers


def test_warn_decides_but_never_sets(burst, monkeypatch):
    # A decision to change (forced: the recording is too short for the law
    # to want one), which warn only recommends.
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    t, mgr = Tuner(), FakeMgr()
    tiers = step(t, burst, mgr)
    (pid,) = tiers
    assert pid in t.views and isinstance(t.views[pid].decision, Decision)
    assert t.views[pid].mode == 'warn'
    assert t.views[pid].decision.action == 'change'
    assert t.views[pid].decision.next == Ratios(0.2, 0.3, 0.9)
    assert mgr.sets == [] and mgr.audits == [] and not t.history(pid)
    assert t.settings.pool(pid).planned is None and t.settings.pool(pid).baseline is None


def test_on_applies_in_order_records_and_audits(burst, monkeypatch):
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.3, 0.9))
    pool = tiers[pid].pool
    # raising full first, then lowering dirty before dirty_high: never misordered
    assert [v for _, v, _ in mgr.sets] == ['cache_target_full_ratio',
                                           'cache_target_dirty_ratio',
                                           'cache_target_dirty_high_ratio']
    assert _ordered_all_the_way(Ratios(0.4, 0.6, 0.8), mgr.sets)
    assert all(p == pool for p, _, _ in mgr.sets)
    ps = t.settings.pool(pid)
    assert ps.baseline == Ratios(0.4, 0.6, 0.8)
    assert ps.last_applied == Ratios(0.2, 0.3, 0.9) and ps.last_change_wall is not None
    (rec,) = t.history(pid)
    assert rec.result == 'applied' and rec.reason == 'test: forced'
    assert mgr.audits and '0.40/0.60/0.80 -> 0.20/0.30/0.90' in mgr.audits[0]
    assert mgr.saved and mgr.saved_history == [pid]


def on_after_a_tick(burst, monkeypatch=None, forced: Optional[Ratios] = None, tick=None):
    """A Tuner in on mode after one tick on the recording, its FakeMgr, the
    tiers and the pool id; forced: the change the controller is made to
    ask for (force_change)."""
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    if forced is not None:
        force_change(monkeypatch, forced)
    tiers = (tick or step)(t, burst, mgr)
    (pid,) = tiers
    return t, mgr, tiers, pid


def _ordered_all_the_way(start: Ratios, sets) -> bool:
    cur = start.as_dict()
    names = {'cache_target_dirty_ratio': 'dirty', 'cache_target_dirty_high_ratio': 'dirty_high',
             'cache_target_full_ratio': 'full'}
    for _, var, val in sets:
        cur[names[var]] = float(val)
        if not 0 <= cur['dirty'] <= cur['dirty_high'] <= cur['full'] <= 1:
            return False
    return True


def test_a_hand_change_is_respected_not_fought(burst, monkeypatch):
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    tiers = step(t, burst, FakeMgr())
    (pid,) = tiers
    # tiertune believes it last set something else than the pool has now
    t.settings.pool(pid).last_applied = Ratios(0.3, 0.6, 0.8)
    force_change(monkeypatch, Ratios(0.1, 0.6, 0.8))
    step(t, burst, mgr)
    ps = t.settings.pool(pid)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change
    assert 'tiertune had them at 0.30/0.60/0.80, as it set or took them over' in \
        ps.manual_change
    assert mgr.sets == []
    assert any('changed outside tiertune' in a for a in mgr.audits)


def refused_dirty(burst, monkeypatch, target: Ratios):
    """A tuner in on mode after one tick whose forced change to target the
    mon refused at cache_target_dirty_ratio: the tuner, its FakeMgr, the
    pool id and the change's history record."""
    t, mgr = Tuner(), FakeMgr(fail_on='cache_target_dirty_ratio')
    t.settings.mode = 'on'
    force_change(monkeypatch, target)
    (pid,) = step(t, burst, mgr)
    (rec,) = t.history(pid)
    return t, mgr, pid, rec


def test_a_failed_set_is_recorded_and_backs_off(burst, monkeypatch):
    t, mgr, pid, rec = refused_dirty(burst, monkeypatch, Ratios(0.2, 0.6, 0.8))
    assert rec.result.startswith('failed: osd pool set') and 'retry in 30s' in rec.result
    assert t.settings.pool(pid).last_change_wall is None   # nothing went through
    # within the backoff: no new attempt
    step(t, burst, mgr, mono_offset=10)
    assert len(t.history(pid)) == 1
    # after it: tried again, backoff doubled
    step(t, burst, mgr, mono_offset=31)
    assert len(t.history(pid)) == 2 and 'retry in 60s' in t.history(pid)[-1].result


def test_a_change_refused_part_way_says_the_rest_waits_for_the_rate_limit(burst, monkeypatch):
    # full went through, then dirty was refused: a change all the same (the
    # rate limit holds the rest), which the line said was a 30 s retry
    # (found by a review helper: the retry came 600 s on).
    t, mgr, pid, rec = refused_dirty(burst, monkeypatch, Ratios(0.2, 0.6, 0.9))
    assert [v for _, v, _ in mgr.sets] == ['cache_target_full_ratio']
    assert rec.result.endswith('(retry in 30s, or once the rate limit allows: part of it '
                               'was made)')
    assert t.settings.pool(pid).last_change_wall is not None


def test_reset_restores_baseline_and_goes_to_warn(burst, monkeypatch):
    t, mgr, tiers, pid = on_after_a_tick(burst)
    tier = tiers[pid]
    ps = t.settings.pool(pid)
    ps.baseline = Ratios(0.3, 0.4, 0.7)
    rc, msg = t.reset(pid, tier, mgr.effects(), 123.0, 0.0)
    assert rc == 0 and '0.30/0.40/0.70' in msg
    assert _ordered_all_the_way(tier.ratios, mgr.sets)
    assert {v: float(x) for _, v, x in mgr.sets} == {
        'cache_target_dirty_ratio': 0.3, 'cache_target_dirty_high_ratio': 0.4,
        'cache_target_full_ratio': 0.7}
    assert ps.mode == 'warn' and ps.baseline is None
    assert t.history(pid)[-1].result == 'reset'
    # A second reset has no baseline: it says the pool was reset, not that
    # tiertune never changed it (its history says otherwise; an operator review).
    sent = len(mgr.sets)
    rc, msg = t.reset(pid, tier, mgr.effects(), 124.0, 1.0)
    assert rc == 0 and 'already reset' in msg and 'never' not in msg
    assert len(mgr.sets) == sent


def test_a_reset_counts_for_the_rate_limit(burst, monkeypatch):
    # A reset resets the PGs' hit sets like any change: the controller's
    # rate limit (min_interval_s) counts from it once the pool is on again.
    from tiertune import controller
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.3, 0.9))
    ps = t.settings.pool(pid)
    ps.baseline = Ratios(0.3, 0.4, 0.7)
    later = ps.knobs.min_interval_s + 60.0      # the first change's limit is over
    _, _, mono, wall = replay(burst)
    rc, _ = t.reset(pid, tiers[pid], mgr.effects(), wall + later, mono + later)
    assert rc == 0 and ps.last_change_wall == wall + later
    monkeypatch.undo()      # the real controller, its inputs recorded
    real, seen = controller.decide, []
    monkeypatch.setattr(controller, 'decide', lambda inp: seen.append(inp) or real(inp))
    ps.mode = 'on'
    step(t, burst, mgr, mono_offset=later + 1.0)
    (inp,) = seen
    assert inp.last_change_s == pytest.approx(mono + later)


def test_reset_without_baseline_changes_nothing(burst):
    t, mgr = Tuner(), FakeMgr()
    tiers = step(t, burst, mgr)
    (pid,) = tiers
    rc, msg = t.reset(pid, tiers[pid], mgr.effects(), 1.0, 0.0)
    assert rc == 0 and 'never changed it' in msg and mgr.sets == []


def test_hold_reasons(burst):
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    tier = tiers[pid]
    entries = list(book.get(pid).entries)
    assert hold_reasons(tier, entries, [], 3.0, mono) == []
    assert 'notieragent' in hold_reasons(tier, entries, ['notieragent'], 3.0, mono)[0]
    assert 'stale' in hold_reasons(tier, entries, [], 3.0, mono + 60)[0]
    assert 'no target' in hold_reasons(dataclasses.replace(tier, target_max_bytes=0),
                                       entries, [], 3.0, mono)[0]
    assert hold_reasons(dataclasses.replace(tier, overlay=False, overlay_pool=''), entries, [], 3.0,
                        mono)[0].startswith('no overlay: pool base sends its clients straight '
                                            'to the base, not to this tier')
    # A base with another tier as its overlay sends them there.
    assert 'sends its clients to tier other, not to this tier' in hold_reasons(
        dataclasses.replace(tier, overlay=False, overlay_pool='other'), entries, [], 3.0,
        mono)[0]
    last = entries[-1]
    degraded = dataclasses.replace(last.sample, counters=dataclasses.replace(
        last.sample.counters, num_objects_degraded=3))
    entries[-1] = dataclasses.replace(last, sample=degraded)
    assert 'not all objects are clean (3 degraded' in hold_reasons(tier, entries, [], 3.0,
                                                                     mono)[0]


@pytest.mark.parametrize('flags,held', [
    (['pauserd', 'pausewr'], ["the pauserd flag is set: client reads and the agent's promotions "
                              "wait", "the pausewr flag is set: client writes and the agent's "
                              "flushes wait"]),
    (['pausewr'], ["the pausewr flag is set: client writes and the agent's flushes wait"]),
    (['noout', 'noscrub'], [])])
def test_a_paused_cluster_is_held(burst, flags, held):
    """`ceph osd pause`: no client IO reads as idle, and is not."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    reasons = hold_reasons(tiers[pid], list(book.get(pid).entries), flags, 3.0, mono)
    assert reasons == held


def test_a_full_base_a_pg_count_change_and_a_split_left_unscrubbed_are_held(burst):
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    tier, entries = tiers[pid], list(book.get(pid).entries)

    def holds(**changes):
        return hold_reasons(dataclasses.replace(tier, **changes), entries, [], 3.0, mono)
    assert holds(base_full=True) == ['base pool base is full (quota or OSDs): flushes cannot '
                                     'land, and writes through the tier wait']
    n = tier.pg_num
    assert holds(pg_num_target=2 * n) == [f'its PG count is changing (pg_num {n} -> {2 * n})']
    assert holds(invalid_stats_pgs=5) == [
        f'5 of its PGs have had no scrub since a PG split: the tier agent neither flushes nor '
        f'evicts on them until they are scrubbed (ceph osd pool scrub {tier.pool}); the ratios '
        f'do not act there']


@pytest.mark.parametrize('mode,holds', [('writeback', False), ('readproxy', False),
                                        ('readonly', False), ('proxy', True),
                                        ('forward', True)])
def test_a_tier_that_takes_no_new_objects_is_held(burst, mode, holds):
    """Ceph's procedure to remove a writeback tier sets it to proxy, then
    flushes and evicts it by hand: tiertune leaves its ratios alone."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    tier = dataclasses.replace(tiers[pid], cache_mode=mode)
    reasons = hold_reasons(tier, list(book.get(pid).entries), [], 3.0, mono)
    assert reasons == ([f'cache_mode {mode}: the tier takes no new objects (it is bypassed, '
                        f'or drained to be removed)'] if holds else [])


def test_a_partly_applied_batch_counts_as_a_change(burst, monkeypatch):
    # full goes up first, then dirty_high fails: the pool did change
    t, mgr = Tuner(), FakeMgr(fail_on='cache_target_dirty_high_ratio')
    t.settings.mode = 'on'
    force_change(monkeypatch, Ratios(0.4, 0.7, 0.9))
    tiers = step(t, burst, mgr)
    (pid,) = tiers
    ps = t.settings.pool(pid)
    assert mgr.sets == [('cache', 'cache_target_full_ratio', '0.900000')]
    assert ps.last_applied == Ratios(0.4, 0.6, 0.9) and ps.last_change_wall is not None
    assert 'incomplete' in mgr.audits[0] and t.history(pid)[-1].result.startswith('failed')


def test_rate_limit_waits_a_hit_set_period_only_with_hit_sets(burst, monkeypatch):
    from tiertune import controller
    seen = []
    real = controller.decide

    def decide(inp):
        seen.append(inp.hit_set_period_s)
        return real(inp)
    monkeypatch.setattr(controller, 'decide', decide)
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    assert tiers[pid].hit_set.active and tiers[pid].hit_set.period_s > 0
    Tuner().step(tiers, book, [], {}, 3.0, FakeMgr().effects(), mono, wall)
    # Count 0 (or period 0, or no type): no hit sets to lose.
    bare = {pid: dataclasses.replace(
        tiers[pid], hit_set=dataclasses.replace(tiers[pid].hit_set, count=0))}
    Tuner().step(bare, book, [], {}, 3.0, FakeMgr().effects(), mono, wall)
    assert seen == [tiers[pid].hit_set.period_s, 0]


def test_a_view_read_ticks_later_has_the_model_fit_gave(burst):
    """The promote gate waits until the view's model is read; however many
    ticks later, the model is what fit() gave at its own tick (the pool's
    arrays have since had rows appended and dropped, moved to new columns
    and been rebuilt for a new tier)."""
    from tiertune import models
    from tiertune.tuner import PoolView
    tiers = cache_tiers(burst['samples'][0]['inputs']['osd_map'])
    (pid,) = tiers
    book, t, mgr = HistoryBook(7), Tuner(), FakeMgr()
    kept: List[Tuple[PoolView, models.PoolModel]] = []
    for k, rec in enumerate(burst['samples'] * 3):
        if k == 40:     # the operator changed the target: the arrays are rebuilt
            tiers = {pid: dataclasses.replace(tiers[pid],
                                              target_max_bytes=tiers[pid].target_max_bytes * 2)}
        mono, wall = 30.0 * k, 1.7e9 + 30.0 * k   # all 7 rows within the gate's window
        s = take_samples(RecordingGetter(rec['inputs']), tiers, mono, wall)
        book.record(s, {p: agent_levels(tiers[p], x.counters).dirty_bytes
                        for p, x in s.items()}, tiers)
        t.step(tiers, book, [], {}, 3.0, mgr.effects(), mono, wall)
        hist = book.get(pid)
        eager = models.fit(list(hist.entries), tiers[pid], not_current=hist.not_current())
        view = t.views[pid]
        same_value(view.predictions, eager.predictions)    # read without the gate
        kept.append((view, eager))
    for view, eager in kept:
        same_value(view.model, eager)


def step_as(tuner, burst, mgr, ratios=None, last_change=None, mono_offset=0.0):
    """step(), with the OSD map showing these ratios and this last_change."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    changes = {k: v for k, v in (('ratios', ratios), ('last_change', last_change))
               if v is not None}
    tiers = {pid: dataclasses.replace(tiers[pid], **changes)}
    tuner.step(tiers, book, [], {}, 3.0, mgr.effects(), mono + mono_offset,
               wall + mono_offset)
    return tiers


def test_a_hand_change_before_tiertunes_first_change_is_respected(burst, monkeypatch):
    """On its first tick in `on` mode tiertune takes the ratios the pool has
    as its own; one changed after that by someone else is not taken back."""
    t, mgr, tiers, pid = on_after_a_tick(burst, tick=step_as)
    ps = t.settings.pool(pid)
    assert ps.last_applied == tiers[pid].ratios and mgr.saved
    force_change(monkeypatch, Ratios(0.1, 0.6, 0.8))
    step_as(t, burst, mgr, ratios=Ratios(0.5, 0.6, 0.8), mono_offset=1)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change
    assert mgr.sets == []


def test_a_map_from_before_tiertunes_own_change_is_no_hand_change(burst, monkeypatch):
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.3, 0.9), tick=step_as)
    old = tiers[pid].ratios
    ps = t.settings.pool(pid)
    # Three commands, three OSD map epochs: full, then dirty, then dirty_high.
    assert ps.last_applied == Ratios(0.2, 0.3, 0.9) and len(mgr.sets) == 3
    # A tick before the mgr has the first of those maps, and one between them.
    for offset, shown in ((1, old), (2, Ratios(0.4, 0.6, 0.9)), (3, Ratios(0.2, 0.6, 0.9))):
        step_as(t, burst, mgr, ratios=shown, mono_offset=offset)
        assert t.settings.effective_mode(pid) == 'on' and ps.manual_change is None, offset
    step_as(t, burst, mgr, ratios=Ratios(0.2, 0.3, 0.9), mono_offset=4)
    assert t.settings.effective_mode(pid) == 'on' and ps.manual_change is None
    # Ratios tiertune never had on the way: by hand, however soon.
    step_as(t, burst, mgr, ratios=Ratios(0.3, 0.3, 0.9), mono_offset=5)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change


def test_a_change_whose_commands_took_long_is_timed_from_its_last(burst, monkeypatch):
    """Three `osd pool set`s that took 15 s each (a mon election): the map
    still showing the first of them 10 s after the last returned has
    lagged, not been set back (the change was stamped at its decision,
    45 s before, and read as a hand change)."""
    from tiertune.tuner import MAP_CATCH_UP_S
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    now = [mono]

    def slow_set(pid: int, pool: str, var: str, val: str) -> Optional[str]:
        now[0] += 15.0
        return mgr.pool_set(pid, pool, var, val)
    eff = dataclasses.replace(mgr.effects(), pool_set=slow_set, clock=lambda: now[0])
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    t.step(tiers, book, [], {}, 3.0, eff, mono, wall)
    assert len(mgr.sets) == 3 and now[0] - mono == 45 > MAP_CATCH_UP_S
    old = tiers[pid].ratios
    monkeypatch.undo()                            # the law as it is: no forced change
    step_as(t, burst, mgr, ratios=old, mono_offset=55)
    ps = t.settings.pool(pid)
    assert t.settings.effective_mode(pid) == 'on' and ps.manual_change is None
    # Still a hand change once the map has had its time after the last.
    step_as(t, burst, mgr, ratios=old, mono_offset=45 + MAP_CATCH_UP_S + 1)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change


def test_the_old_ratios_back_long_after_tiertunes_change_are_a_hand_change(burst, monkeypatch):
    """A map that still shows the ratios from before tiertune's change
    MAP_CATCH_UP_S after it has not lagged: someone set them back."""
    from tiertune.tuner import MAP_CATCH_UP_S
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.6, 0.8), tick=step_as)
    old = tiers[pid].ratios
    monkeypatch.undo()                            # the law as it is: no forced change
    step_as(t, burst, mgr, ratios=Ratios(0.2, 0.6, 0.8), mono_offset=1)
    step_as(t, burst, mgr, ratios=old, mono_offset=MAP_CATCH_UP_S + 1)
    ps = t.settings.pool(pid)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change


def test_reset_from_a_map_older_than_tiertunes_change_still_restores(burst, monkeypatch):
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.3, 0.9), tick=step_as)
    mgr.sets.clear()
    # The map still shows the baseline (0.4/0.6/0.8): the pool has 0.2/0.3/0.9.
    mono = replay(burst)[2]
    rc, msg = t.reset(pid, tiers[pid], mgr.effects(), 200.0, mono + 1)
    assert rc == 0
    assert {v: float(x) for _, v, x in mgr.sets} == {
        'cache_target_dirty_ratio': 0.4, 'cache_target_dirty_high_ratio': 0.6,
        'cache_target_full_ratio': 0.8}
    assert _ordered_all_the_way(Ratios(0.2, 0.3, 0.9), mgr.sets)
    assert t.history(pid)[-1].old == Ratios(0.2, 0.3, 0.9)


def test_reset_after_mode_on_from_a_map_older_than_tiertunes_change_still_restores(
        burst, monkeypatch):
    """`mode <pool> on` clears last_applied (it takes the ratios over at
    the next tick); a reset before the map showed tiertune's change then
    planned from the map's old ratios: nothing sent, "restored", the
    baseline dropped (a review helper)."""
    t, mgr, tiers, pid = on_after_a_tick(burst, monkeypatch, Ratios(0.2, 0.3, 0.9), tick=step_as)
    mgr.sets.clear()
    ps = t.settings.pool(pid)
    ps.manual_change = ps.last_applied = ps.planned = None   # as _cmd_mode(pool, 'on')
    rc, _ = t.reset(pid, tiers[pid], mgr.effects(), 200.0, replay(burst)[2] + 1)
    assert rc == 0
    assert {v: float(x) for _, v, x in mgr.sets} == {
        'cache_target_dirty_ratio': 0.4, 'cache_target_dirty_high_ratio': 0.6,
        'cache_target_full_ratio': 0.8}
    assert t.history(pid)[-1].old == Ratios(0.2, 0.3, 0.9)


def test_a_reset_that_fails_half_way_records_what_it_changed(burst, monkeypatch):
    t, mgr, tiers, pid = on_after_a_tick(burst, tick=step_as)
    ps = t.settings.pool(pid)
    ps.baseline = Ratios(0.2, 0.3, 0.9)
    # Raises go first (full), then lowerings from the bottom (dirty, dirty_high).
    failing = FakeMgr(fail_on='cache_target_dirty_high_ratio')
    rc, msg = t.reset(pid, tiers[pid], failing.effects(), 300.0, replay(burst)[2])
    assert rc == -errno.EIO and 'cache_target_dirty_high_ratio' in msg
    reached = Ratios(0.2, 0.6, 0.9)
    assert [v for _, v, _ in failing.sets] == ['cache_target_full_ratio',
                                               'cache_target_dirty_ratio']
    assert ps.last_applied == reached and ps.last_change_wall == 300.0 and ps.mode is None
    rec = t.history(pid)[-1]
    assert rec.mode == 'reset' and rec.result.startswith('failed: osd pool set')
    assert any('stopped at 0.20/0.60/0.90' in a for a in failing.audits)
    assert failing.saved and failing.saved_history == [pid]
    # The next tick, on the map of that half reset, sees no hand change.
    step_as(t, burst, mgr, ratios=reached, mono_offset=1)
    assert ps.manual_change is None and t.settings.effective_mode(pid) == 'on'


def test_a_slow_reset_that_stops_part_way_is_not_then_read_as_a_hand_change(burst):
    """Its first `osd pool set` takes 25 s (a mon election), the next is
    refused; the next tick's map, an epoch behind, still shows the ratios
    from before the reset.  Stamped when the reset began, the change was
    past MAP_CATCH_UP_S already, and that map read as a hand change (the
    pool to warn).  Noticed by a review helper."""
    from tiertune.tuner import MAP_CATCH_UP_S
    t, mgr, tiers, pid = on_after_a_tick(burst, tick=step_as)
    ps = t.settings.pool(pid)
    ps.baseline = Ratios(0.2, 0.3, 0.9)
    before = tiers[pid].ratios
    mono = replay(burst)[2]
    clock = {'now': mono}
    sets: List[str] = []

    def slow_then_refused(pid: int, pool: str, var: str, val: str) -> Optional[str]:
        sets.append(var)
        if len(sets) > 1:
            return 'Error EAGAIN: try again'
        clock['now'] += MAP_CATCH_UP_S + 5
        return None

    eff = dataclasses.replace(mgr.effects(), pool_set=slow_then_refused,
                              clock=lambda: clock['now'])
    rc, _ = t.reset(pid, tiers[pid], eff, 300.0, mono)
    assert rc == -errno.EIO and ps.mode is None and len(sets) == 2
    step_as(t, burst, mgr, ratios=before, mono_offset=clock['now'] - mono + 1)
    assert ps.manual_change is None and t.settings.effective_mode(pid) == 'on'


def test_a_reset_cut_short_by_a_failover_leaves_the_pool_in_warn(burst):
    """reset stores its plan, and the pool's `warn`, before its first `osd
    pool set`: a new mgr that finds the pool part way back to its baseline
    neither tunes on from there nor calls it a hand change."""
    from tiertune.state import settings_from_store
    t, mgr, tiers, pid = on_after_a_tick(burst, tick=step_as)
    ps = t.settings.pool(pid)
    ps.baseline = Ratios(0.2, 0.3, 0.9)
    stored: List[str] = []
    sets: List[str] = []

    def pool_set(pid: int, pool: str, var: str, val: str) -> Optional[str]:
        if sets:
            raise Failover()
        sets.append(var)
        return None

    eff = Effects(pool_set=pool_set, save_settings=lambda: stored.append(t.settings.to_json()),
                  save_history=lambda pid: None, audit=lambda m: None, log=lambda m: None)
    _, _, mono, wall = replay(burst)
    with pytest.raises(Failover):
        t.reset(pid, tiers[pid], eff, wall, mono)
    old = tiers[pid].ratios
    assert sets == ['cache_target_full_ratio']
    t2, mgr2 = Tuner(), FakeMgr()
    t2.settings, problems = settings_from_store(stored[-1])
    assert not problems and t2.settings.pool(pid).planned is not None
    midway = Ratios(old.dirty, old.dirty_high, 0.9)
    step_as(t2, burst, mgr2, ratios=midway, mono_offset=60)
    ps2 = t2.settings.pool(pid)
    assert ps2.manual_change is None and t2.settings.effective_mode(pid) == 'warn'
    assert mgr2.sets == []


class Failover(Exception):
    """The mgr dying part way through a change (raised from an `osd pool set`)."""


def cut_short(burst, monkeypatch, error: Exception):
    """A Tuner in on mode whose forced change (to 0.2/0.3/0.9) raises error
    from its second `osd pool set`.  Returns the tuner, the pool id, its
    ratios before, the tick's wall time, the settings stored (JSON, in
    order) and the commands made."""
    t = Tuner()
    t.settings.mode = 'on'
    stored: List[str] = []
    sets: List[Tuple[str, str]] = []

    def pool_set(pid: int, pool: str, var: str, val: str) -> Optional[str]:
        if len(sets) == 1:
            raise error
        sets.append((var, val))
        return None

    eff = Effects(pool_set=pool_set, save_settings=lambda: stored.append(t.settings.to_json()),
                  save_history=lambda pid: None, audit=lambda m: None, log=lambda m: None)
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    with pytest.raises(type(error)):
        t.step(tiers, book, [], {}, 3.0, eff, mono, wall)
    monkeypatch.undo()
    return t, pid, tiers[pid].ratios, wall, stored, sets


def test_a_change_cut_short_by_a_failover_is_tiertunes_own_not_a_hand_change(burst, monkeypatch):
    """The change is stored before its first `osd pool set`: a new mgr that
    finds the pool part way along it keeps the pool in `on`, takes the
    ratios it finds as what tiertune set, and carries on from there."""
    from tiertune.state import settings_from_store
    t, pid, old, wall, stored, sets = cut_short(burst, monkeypatch, Failover())
    assert sets == [('cache_target_full_ratio', '0.900000')]
    # The new mgr: the stored settings, the OSD map with the one command.
    t2, mgr2 = Tuner(), FakeMgr()
    t2.settings, problems = settings_from_store(stored[-1])
    assert not problems and t2.settings.pool(pid).last_applied == old
    midway = Ratios(old.dirty, old.dirty_high, 0.9)
    # The new mgr's first tick, a minute on; its map not showing the
    # command yet (MAP_CATCH_UP_S) keeps the plan for the next.
    step_as(t2, burst, mgr2, ratios=old, mono_offset=5)
    assert t2.settings.pool(pid).planned is not None and mgr2.audits == []
    step_as(t2, burst, mgr2, ratios=midway, mono_offset=60)
    ps = t2.settings.pool(pid)
    assert t2.settings.effective_mode(pid) == 'on' and ps.manual_change is None
    assert ps.last_applied == midway and ps.planned is None
    assert ps.last_change_wall == wall
    assert any('taken as tiertune' in a for a in mgr2.audits)
    # In the history too (the mgr that made it could not record it).
    (rec,) = t2.history(pid)
    assert rec.old == old and rec.new == Ratios(0.2, 0.3, 0.9) and rec.time == wall
    assert rec.result == ('incomplete: stopped at 0.40/0.60/0.90 by a mgr failover or '
                          'restart, or an error')
    assert mgr2.saved_history == [pid]


def test_a_whole_change_a_failover_kept_from_being_recorded_is_in_the_history(
        burst, monkeypatch):
    from tiertune.state import settings_from_store
    t, pid, old, wall, stored, _ = cut_short(burst, monkeypatch, RuntimeError('x'))
    t2, mgr2 = Tuner(), FakeMgr()
    t2.settings, _ = settings_from_store(stored[-1])
    step_as(t2, burst, mgr2, ratios=Ratios(0.2, 0.3, 0.9), mono_offset=60)
    (rec,) = t2.history(pid)
    assert rec.result == 'applied' and rec.new == Ratios(0.2, 0.3, 0.9)
    (audit,) = [a for a in mgr2.audits if 'taken as tiertune' in a]
    assert 'not recorded before a mgr failover' in audit and 'stopped at' not in audit


def test_a_change_recorded_before_a_failover_that_lost_its_settings_has_one_line(
        burst, monkeypatch):
    """A change's history line is stored before the settings that clear its
    plan: a failover between the two writes leaves the next mgr the plan
    and the line, and it settles the plan without a second line or an
    audit saying the change went unrecorded."""
    from tiertune.state import history_from_json, history_to_store, settings_from_store
    t = Tuner()
    t.settings.mode = 'on'
    writes: List[Tuple[str, str]] = []
    eff = Effects(pool_set=lambda pid, pool, var, val: None,
                  save_settings=lambda: writes.append(('settings', t.settings.to_json())),
                  save_history=lambda p: writes.append(('history', history_to_store(
                      t.history(p)))),
                  audit=lambda m: None, log=lambda m: None)
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    t.step(tiers, book, [], {}, 3.0, eff, mono, wall)
    monkeypatch.undo()
    kinds = [k for k, _ in writes]
    # The plan, then the line, then the settings that clear the plan.
    assert kinds[-2:] == ['history', 'settings'] and 'settings' in kinds[:-2]
    # The mgr fails over after the line is written, before the settings.
    plan_stored = [v for k, v in writes[:-1] if k == 'settings'][-1]
    line_stored = writes[-2][1]
    t2, mgr2 = Tuner(), FakeMgr()
    t2.settings, problems = settings_from_store(plan_stored)
    assert not problems and t2.settings.pool(pid).planned is not None
    t2.histories[pid], _ = history_from_json(line_stored)
    step_as(t2, burst, mgr2, ratios=Ratios(0.2, 0.3, 0.9), mono_offset=60)
    ps = t2.settings.pool(pid)
    assert ps.planned is None and ps.last_applied == Ratios(0.2, 0.3, 0.9)
    assert ps.last_change_wall == wall and t2.settings.effective_mode(pid) == 'on'
    (rec,) = t2.history(pid)
    assert rec.result == 'applied' and rec.time == wall and 'lost' not in rec.reason
    assert not any('taken as tiertune' in a for a in mgr2.audits)
    assert mgr2.saved and mgr2.saved_history == []


def test_a_change_an_unexpected_error_cut_short_is_tiertunes_own(burst, monkeypatch):
    """Not a refusal (returned, and handled by _apply) but an exception out
    of an `osd pool set` part way: the same mgr's next tick finds the
    plan in memory and takes the ratios the commands made as its own."""
    t, pid, old, _, _, sets = cut_short(burst, monkeypatch, RuntimeError('mon connection lost'))
    assert sets == [('cache_target_full_ratio', '0.900000')]
    mgr = FakeMgr()
    midway = Ratios(old.dirty, old.dirty_high, 0.9)
    step_as(t, burst, mgr, ratios=midway, mono_offset=30)
    ps = t.settings.pool(pid)
    assert t.settings.effective_mode(pid) == 'on' and ps.manual_change is None
    assert ps.last_applied == midway and ps.planned is None
    assert any('cut short' in a for a in mgr.audits)


def test_ratios_off_a_cut_short_change_are_still_a_hand_change(burst, monkeypatch):
    from tiertune.state import PlannedChange
    t, mgr, tiers, pid = on_after_a_tick(burst, tick=step_as)
    old = tiers[pid].ratios
    ps = t.settings.pool(pid)
    assert ps.last_applied == old
    ps.planned = PlannedChange((old, Ratios(old.dirty, old.dirty_high, 0.9),
                                Ratios(0.2, old.dirty_high, 0.9)), 1.0)
    step_as(t, burst, mgr, ratios=Ratios(0.35, old.dirty_high, 0.9), mono_offset=1)
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change
    assert ps.planned is None and mgr.sets == []


def test_a_completed_change_leaves_nothing_planned(burst, monkeypatch):
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    saved: List[str] = []
    mgr._save = lambda: saved.append(t.settings.to_json())
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    tiers = step(t, burst, mgr)
    (pid,) = tiers
    assert len(mgr.sets) == 3
    # Saved with the plan before the commands, and without it after.
    assert '"planned": {' in saved[-2] and '"planned": null' in saved[-1]
    assert t.settings.pool(pid).planned is None


def test_a_plan_left_long_before_does_not_cover_ratios_set_by_hand_since(burst, monkeypatch):
    """A mgr down for long: undoing the last command by hand lands on an
    earlier step of the plan, and is a hand change all the same."""
    from tiertune.state import PlannedChange
    from tiertune.tuner import PLANNED_SETTLE_S
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    old = tiers[pid].ratios
    ps = t.settings.pool(pid)
    ps.last_applied = old
    midway = Ratios(old.dirty, old.dirty_high, 0.9)
    ps.planned = PlannedChange((old, midway, Ratios(0.2, old.dirty_high, 0.9)), wall)
    assert PLANNED_SETTLE_S < 600
    step_as(t, burst, mgr, ratios=midway, mono_offset=600)    # ten minutes on
    assert ps.mode == 'warn' and 'changed outside tiertune' in ps.manual_change
    assert ps.planned is None and mgr.sets == []


# ----- one pool that cannot be fitted or decided --------------------------------

def two_tiers(burst):
    """The recording's tier and a copy of it, pool 'other' with the same
    samples: (tiers, book, mono, wall, its id, the copy's)."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    other = pid + 100
    tiers = {pid: tiers[pid], other: dataclasses.replace(tiers[pid], pool_id=other, pool='other')}
    book.restore(other, book.saved_entries(pid))
    return tiers, book, mono, wall, pid, other


def fit_raises_for(monkeypatch, broken):
    """The inflow estimate raises for the pools named in the set broken
    (as an unforeseen sample might make it); the set can be changed later."""
    from tiertune import models
    real = models._inflow

    def inflow(s, tier, levels):
        if tier.pool in broken:
            raise ZeroDivisionError('test: odd samples')
        return real(s, tier, levels)
    monkeypatch.setattr(models, '_inflow', inflow)


def test_a_pool_whose_fit_raises_is_left_as_it_is_and_the_others_are_tuned(burst,
                                                                             monkeypatch):
    tiers, book, mono, wall, pid, other = two_tiers(burst)
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    broken = {'other'}
    fit_raises_for(monkeypatch, broken)
    logged: List[str] = []
    eff = dataclasses.replace(mgr.effects(), log_error=logged.append)
    for tick in range(2):
        t.step(tiers, book, [], {}, 3.0, eff, mono + tick, wall + tick)
    # the other pool (fitted in the same batch) got its change; the broken one nothing
    assert mgr.sets and {p for p, _, _ in mgr.sets} == {tiers[pid].pool}
    assert pid in t.views and other not in t.views and pid not in t.failures
    f = t.failures[other]
    assert (f.error, f.since_wall, f.ticks) == ('ZeroDivisionError: test: odd samples', wall, 2)
    (line,) = logged    # once while the same error repeats
    assert f'pool {other}' in line and 'odd samples' in line
    broken.clear()      # the samples that upset it are gone
    t.step(tiers, book, [], {}, 3.0, eff, mono + 2, wall + 2)
    assert other in t.views and other not in t.failures
    assert 'other' in {p for p, _, _ in mgr.sets}


def test_a_pool_whose_decision_raises_is_left_out_of_the_ticks_changes(burst, monkeypatch):
    tiers, book, mono, wall, pid, other = two_tiers(burst)
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    real = Tuner._controller_input

    def controller_input(self, p, *args):
        if p == pid:    # the first pool of the batch: the one after it is still decided
            raise KeyError('test')
        return real(self, p, *args)
    monkeypatch.setattr(Tuner, '_controller_input', controller_input)
    logged: List[str] = []
    changes = t.decide(tiers, book, [], {}, 3.0,
                       dataclasses.replace(mgr.effects(), log_error=logged.append), mono, wall)
    assert [c.pid for c in changes] == [other]
    assert set(t.views) == {other} and set(t.failures) == {pid}
    assert t.failures[pid].error == "KeyError: 'test'" and len(logged) == 1


def test_a_fit_that_raised_part_way_leaves_no_half_updated_arrays(burst, monkeypatch):
    """The pool's arrays are rebuilt from its history after a failure: its
    model is then the one a fit of the whole history gives."""
    from tiertune import models
    tiers, book, mono, wall, pid, other = two_tiers(burst)
    t, mgr = Tuner(), FakeMgr()
    broken = {'other'}
    fit_raises_for(monkeypatch, broken)
    eff = dataclasses.replace(mgr.effects(), log_error=lambda m: None)
    t.step(tiers, book, [], {}, 3.0, eff, mono, wall)
    assert other not in t.series
    broken.clear()
    t.step(tiers, book, [], {}, 3.0, eff, mono + 1, wall + 1)
    alone = models.fit(book.get(other).entries, tiers[other])
    assert t.views[other].model == alone


def test_changes_after_one_whose_commands_raise_are_no_longer_planned(burst, monkeypatch):
    """Both pools' changes are planned (stored) before any command; the first
    pool's raises part way (a failover): it stays planned, for the next
    mgr to settle; the second's never started, and is stored as not planned."""
    from tiertune.state import settings_from_store
    tiers, book, mono, wall, pid, other = two_tiers(burst)
    t = Tuner()
    t.settings.mode = 'on'
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    stored: List[str] = []
    sets: List[str] = []

    def pool_set(pid: int, pool: str, var: str, val: str) -> Optional[str]:
        if sets:
            raise Failover()
        sets.append(pool)
        return None
    eff = Effects(pool_set=pool_set, save_settings=lambda: stored.append(t.settings.to_json()),
                  save_history=lambda pid: None, audit=lambda m: None, log=lambda m: None)
    changes = t.decide(tiers, book, [], {}, 3.0, eff, mono, wall)
    assert [c.pid for c in changes] == [pid, other]
    planned, _ = settings_from_store(stored[-1])
    assert planned.pool(pid).planned is not None and planned.pool(other).planned is not None
    with pytest.raises(Failover):
        t.make_changes(changes, eff)
    assert sets == [tiers[pid].pool]
    after, _ = settings_from_store(stored[-1])
    assert after.pool(pid).planned is not None and after.pool(other).planned is None
    assert after.pool(other).last_applied == tiers[other].ratios     # nothing set there


def test_eval_during_a_change_under_way_says_on_not_warn(burst, monkeypatch):
    """While the tick's commands wait for the mon, the OSD map already shows
    the first of them: eval must not call that a hand change (the tick
    records it as its own a moment later); ratios off the plan's path are."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    t, mgr = Tuner(), FakeMgr()
    t.settings.mode = 'on'
    force_change(monkeypatch, Ratios(0.2, 0.3, 0.9))
    (change,) = t.decide(tiers, book, [], {}, 3.0, mgr.effects(), mono, wall)
    path = t.settings.pool(pid).planned.path
    midway = dataclasses.replace(tiers[pid], ratios=path[1])
    assert t.evaluate(pid, midway, book, [], {}, 3.0, mono + 1, wall + 1).mode == 'on'
    by_hand = dataclasses.replace(tiers[pid], ratios=Ratios(0.5, 0.6, 0.8))
    assert t.evaluate(pid, by_hand, book, [], {}, 3.0, mono + 1, wall + 1).mode == 'warn'


def test_a_pool_that_cannot_be_fitted_still_settles_a_change_cut_short(burst, monkeypatch):
    """A failover cut tiertune's change short, and the new mgr cannot fit
    the pool for longer than PLANNED_SETTLE_S: the change is still settled
    as tiertune's own (it needs no model), not taken for a hand change when
    the pool is fitted again."""
    from tiertune.state import settings_from_store
    from tiertune.tuner import PLANNED_SETTLE_S
    t, pid, old, wall, stored, sets = cut_short(burst, monkeypatch, Failover())
    t2, mgr2 = Tuner(), FakeMgr()
    t2.settings, _ = settings_from_store(stored[-1])
    midway = Ratios(old.dirty, old.dirty_high, 0.9)
    broken = {'cache'}
    fit_raises_for(monkeypatch, broken)
    effects = mgr2.effects
    mgr2.effects = lambda: dataclasses.replace(effects(), log_error=lambda m: None)
    for offset in (60, 120, 240, PLANNED_SETTLE_S + 30):
        step_as(t2, burst, mgr2, ratios=midway, mono_offset=offset)
    assert pid in t2.failures
    broken.clear()
    step_as(t2, burst, mgr2, ratios=midway, mono_offset=PLANNED_SETTLE_S + 60)
    ps = t2.settings.pool(pid)
    assert pid not in t2.failures
    assert t2.settings.effective_mode(pid) == 'on' and ps.manual_change is None
    assert ps.planned is None and ps.last_applied == midway


def test_recovery_in_the_base_pool_holds_the_pool(burst):
    """Recovery traffic in the base is no client IO: the base reads idle, and
    the law would drain dirty data into objects waiting to be recovered."""
    tiers, book, mono, wall = replay(burst)
    (pid,) = tiers
    entries = list(book.get(pid).entries)
    assert hold_reasons(tiers[pid], entries, [], 3.0, mono) == []
    last = entries[-1]
    base = dataclasses.replace(last.sample.base, num_objects_degraded=5000,
                               num_objects_misplaced=20000)
    entries[-1] = dataclasses.replace(last, sample=dataclasses.replace(last.sample, base=base))
    (why,) = hold_reasons(tiers[pid], entries, [], 3.0, mono)
    assert why.startswith(f'not all objects of base pool {tiers[pid].base_pool} are clean')
    assert '5000 degraded, 20000 misplaced' in why
