"""Where the simulator's agent, promotion and blocking differ from Ceph
16.2.15 (PrimaryLogPG.cc, OSD.cc, HitSet.h, bloom_filter.hpp).  Each test
states what the OSD does; the ones marked xfail fail on the simulator as
it stands (a review's findings, not fixed yet)."""

import json
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

import scenario as scn  # noqa: E402
from sim_state import fill, new_sim  # noqa: E402
from simulator.listing import HASH_BINS  # noqa: E402
from simulator.tier import (  # noqa: E402
    EVICT_FULL,
    EVICT_IDLE,
    EVICT_OBJECTS_PER_S_PER_OSD,
    EVICT_SOME,
    FLUSH_EXTRA_LATENCY_S,
    FLUSH_HIGH,
    FLUSH_IDLE,
    FLUSH_LOW,
    OSD_AGENT_MAX_LOW_OPS,
    OSD_AGENT_MAX_OPS,
    OSD_AGENT_SLOP,
    MiB,
    Ratios,
    TierSim,
    evicts_per_flush,
)
from simulator.workload import IDLE, demand  # noqa: E402

BASE: Dict[str, Any] = {
    'name': 'div', 'description': 'review',
    'cache': {'target_max_bytes': '256MiB', 'pg_num': 8, 'hit_set_period_s': 20},
    'object_size': '4MiB',
    'phases': [{'name': 'w', 'duration_s': 10, 'op': 'write', 'rate_mib_s': 100,
                'keys': {'dist': 'uniform', 'count': 5000}}],
}


def scenario(**changes: Any) -> scn.Scenario:
    d = json.loads(json.dumps(BASE))
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            d[k].update(v)
        else:
            d[k] = v
    return scn.from_dict(d)


def sixteen_pgs_on_four_osds(latency_ms: float = 50, **cache: Any) -> scn.Scenario:
    """An 8 GiB cache of 16 PGs on 4 OSDs over a base of unbounded
    bandwidth and latency_ms: the OSDs' flush quotas, not the base, set
    how much each step flushes."""
    return scenario(cache={'target_max_bytes': '8GiB', 'pg_num': 16, **cache},
                    sim={'cache_osds': 4, 'base_bandwidth_mib_s': 1e6,
                         'base_latency_ms': latency_ms})


def idle_step(sim: TierSim, dt: float = 0.1) -> Tuple[np.ndarray, float, float]:
    """One step of dt with no client IO: the objects each PG of a row
    flushed (its dirty count's fall: with no client ops only flushes take
    dirty objects), and the flushes and evictions the pool counted."""
    before, dirty = dict(sim.totals.cache), sim.D.sum(axis=1).copy()
    sim.step(dt, IDLE)
    after = sim.totals.cache
    return (dirty - sim.D.sum(axis=1), after['num_flush'] - before['num_flush'],
            after['num_evict'] - before['num_evict'])


def inserts_per_pg(sim: TierSim) -> np.ndarray:
    """Inserts into each PG's current in-memory hit set (sim.acc is per object)."""
    return (sim.acc * sim.N).sum(axis=1)


# --- hit sets -----------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason='simulator archives a hit set only when its period ends')
def test_a_hit_set_is_archived_once_it_is_full_not_only_when_its_period_ends() -> None:
    # do_op: `if (hit_set->is_full() || hit_set_start_stamp +
    # hit_set_period <= recv_stamp) hit_set_persist();`.  BloomHitSet::
    # is_full is bloom_filter::is_full, insert_count_ >= target_element_count_,
    # and insert_count_ counts every insert, repeats included.  hit_set_create
    # sizes a set from the previous one's unique count * period / duration,
    # clamped to osd_hit_set_min_size 1000 .. osd_hit_set_max_size 100000
    # (the first set after activation: 1000).  So no current set ever holds
    # more than 100,000 inserts, whatever the period.
    sc = scenario(cache={'target_max_bytes': '8GiB', 'hit_set_period_s': 100000,
                         'min_read_recency': 1},
                  phases=[{'name': 'hot', 'duration_s': 600, 'op': 'read', 'threads': 16,
                           'block_size': '64KiB',
                           'keys': {'dist': 'zipf', 'theta': 0.99, 'count': 200}}])
    sim = new_sim(sc)
    d = demand(sc.phases[0], sim.bins)
    most = 0.0
    for _ in range(600):
        sim.step(1.0, d)
        most = max(most, float(inserts_per_pg(sim).max()))
    assert most > 150000, 'the test must drive a PG past the largest set'
    assert most <= 100000


def test_a_pool_change_keeps_what_the_pg_log_wrote_since_the_last_archive() -> None:
    # hit_set_setup (on_pool_change): hit_set_create(), then
    # hit_set_apply_log(): every pg log entry after
    # info.hit_set.current_last_update (set at the last hit_set_persist) is
    # inserted into the new set: writes, promotions, flushes, evictions.
    # Only reads of objects the cache held are lost.
    sc = scenario(cache={'min_write_recency': 0})
    sim = new_sim(sc)
    d = demand(sc.phases[0], sim.bins)
    for _ in range(5):                       # 5 s of new-object writes, no archive yet
        sim.step(1.0, d)
    assert not sim.archives and sim.totals.cache['num_promote'] > 0
    promoted = float((sim.m * (sim.C + sim.D).sum(axis=1)).sum())
    sim.pool_set('cache_target_dirty_ratio', '0.3')
    kept = float((sim.m * inserts_per_pg(sim)).sum())
    assert kept >= 0.9 * promoted


# --- FULL -------------------------------------------------------------------------

def test_with_hit_sets_writes_released_from_full_are_proxied_not_landed() -> None:
    # The requeued op runs do_op again; the PG is no longer FULL, the
    # object is not in the cache, and with a hit set maybe_handle_cache_detail
    # proxies a write (do_proxy_write) and at most promotes it afterwards,
    # clean, by min_write_recency and the promote throttle.  Only without a
    # hit set (`!hit_set`) does it promote_object first and land dirty.
    sc = scenario(cache={'hit_set_count': 4})
    sim = new_sim(sc)
    fill(sim, 0.95, dirty=True)
    top = sim.G - 1
    sim.blocked[top] = 3.0
    sim.blocked_since[top] = 0.0
    sim.choose_modes()
    assert sim.evict_mode[top] != EVICT_FULL
    dirty_before = float(sim.D[top].sum())
    base_writes = sim.totals.base['num_write']
    sim.step(0.01, IDLE)
    assert sim.blocked[top] == 0.0
    assert float(sim.D[top].sum()) <= dirty_before + 1e-9, 'no released write lands dirty'
    assert sim.totals.base['num_write'] - base_writes >= 3.0 * sim.m[top] - 1e-9


# --- the agent --------------------------------------------------------------------

def test_the_high_flush_quota_is_per_osd() -> None:
    # OSDService::agent_entry: `if (!flush_mode_high_count) agent_flush_quota
    # = osd_agent_max_low_ops - agent_ops;` and flush_mode_high_count is the
    # OSD's own count (agent_inc_high_count from its PGs' agent_choose_mode).
    # 16 PGs on 4 OSDs, one PG HIGH: at most one OSD runs 4 flushes, the
    # others 2 each.
    sc = scenario(cache={'target_max_bytes': '8GiB', 'pg_num': 16},
                  sim={'cache_osds': 4, 'base_bandwidth_mib_s': 1e6})
    sim = new_sim(sc)
    assert sim.G == 16 and (sim.m == 1).all()
    fill(sim, 0.5, dirty=True)
    sim.D[-1] *= 0.65 / 0.5
    sim.choose_modes()
    assert sim.flush_mode[-1] == FLUSH_HIGH and (sim.flush_mode[:-1] == FLUSH_LOW).all()
    before = sim.totals.cache['num_flush']
    dt = 0.1
    sim.step(dt, IDLE)
    flushed = sim.totals.cache['num_flush'] - before
    sp = sc.sim
    flush_time = (sp.base_latency_ms / 1000 + FLUSH_EXTRA_LATENCY_S
                  + sc.object_size / (sp.base_bandwidth_mib_s * MiB))
    ceph_most = (OSD_AGENT_MAX_OPS + 3 * OSD_AGENT_MAX_LOW_OPS) / flush_time * dt
    assert flushed <= ceph_most * (1 + 1e-9)
    # and the HIGH PG's OSD does run 4: more than 2 ops on every OSD
    assert flushed == pytest.approx(ceph_most, rel=1e-6)
    assert flushed > 4 * OSD_AGENT_MAX_LOW_OPS / flush_time * dt * 1.2


def test_evict_effort_spans_from_each_pgs_own_target() -> None:
    # agent_choose_mode: evict_target gets +slop (IDLE) or -slop per PG, then
    # `span = 1000000 - evict_target; evict_effort = max(over * 1e6 / span,
    # min_effort)`, quantized down to 0.1.  A PG leaving IDLE at 0.9 full:
    # (0.9 - 0.816) / (1 - 0.816) = 0.457 -> 0.4, whatever other PGs' modes.
    sc = scenario(cache={'target_max_bytes': '8GiB'})
    sim = new_sim(sc)
    fill(sim, 0.85, dirty=False)
    top = sim.G - 1
    sim.C[top] *= 0.9 / 0.85
    sim.evict_mode[:] = EVICT_SOME
    sim.evict_mode[top] = EVICT_IDLE          # the others evict already
    sim.choose_modes()
    assert sim.evict_mode[top] == EVICT_SOME
    assert sim.effort[top] == pytest.approx(0.4)


def test_pgs_on_osds_without_a_high_pg_pace_evictions_by_their_own_mix() -> None:
    # An OSD with no HIGH PG of its own runs the low quota
    # (OSDService::agent_entry), so its PGs' agent_work passes dirty objects
    # it does not flush and evicts the clean ones it lists: evicts_per_flush
    # of the PG's clean share, as when no PG is HIGH anywhere.  Here the
    # listing ahead of every PG is all dirty (its clean objects just behind
    # the position): that caps the HIGH OSD's PGs (one eviction per flush,
    # the object just flushed) but not the others, half clean.
    sc = sixteen_pgs_on_four_osds()
    sim = new_sim(sc)
    fill(sim, 0.98, dirty=False)
    sim.D[:] = sim.C * 0.5
    sim.C -= sim.D
    top = sim.G - 1
    sim.D[top] = sim.C[top] + sim.D[top]
    sim.C[top] = sim.D[top] * (0.33 / 0.98)
    sim.D[top] -= sim.C[top]
    sim.choose_modes()
    assert sim.flush_mode[top] == FLUSH_HIGH and (sim.flush_mode[:top] == FLUSH_LOW).all()
    assert (sim.effort > 0).all()
    clean, dirty = sim.objects()
    lp = sim.listing
    lp.pos[:] = 0.0
    lp.clean[:] = 0.0
    lp.clean[:, -1] = clean
    lp.dirty[:] = (dirty / lp.dirty.shape[1])[:, None]
    lp.here_clean[:] = 0.0
    lp.here_dirty[:] = lp.dirty[:, 0]
    sim._listing_of = sim._row_sums().tobytes()
    _, flushed, evicted = idle_step(sim)
    assert flushed > 0
    # HIGH OSD: 4 of the 10 ops, one eviction per flush; the rest by a
    # clean share of 0.5 (about 3 per flush): well over one per flush
    assert evicted > 1.5 * flushed


def test_evictions_follow_the_flushes_of_their_own_osd() -> None:
    # OSDService::agent_entry is one thread per OSD over that OSD's own
    # agent_queue; a flush completion (agent_finish_op ->
    # agent_cond.notify_all) wakes that OSD's agent only, which calls
    # agent_work on the PG at the top of its own queue.  So a PG's paced
    # evictions follow its own OSD's flush completions: with the PG
    # holding its OSD's ops (top level), its own flushes.  Here one PG of
    # 16 (4 OSDs) evicts and flushes LOW; the other 15 only flush, on the
    # three other OSDs and behind it on its own.  Per own flush: the
    # flushed object (try_flush_mark_clean) and evicts_per_flush of its
    # clean share, at most.  Flushes on the other OSDs give it none.
    sc = sixteen_pgs_on_four_osds(200, hit_set_count=0)
    sim = new_sim(sc)
    fill(sim, 0.7, dirty=False)
    sim.D[:] = sim.C * (0.5 / 0.7)
    sim.C -= sim.D                    # 0.7 full, 0.5 dirty: LOW, evict IDLE
    top = sim.G - 1
    sim.C[top] *= 0.45 / 0.2          # 0.95 full: SOME
    sim.choose_modes()
    assert (sim.flush_mode == FLUSH_LOW).all()
    assert sim.evict_mode[top] == EVICT_SOME and (sim.evict_mode[:top] == EVICT_IDLE).all()
    clean, dirty = sim.objects()
    p = clean[top] / (clean[top] + dirty[top])
    flushed, _, evicted = idle_step(sim)
    assert flushed[top] > 0 and flushed[:top].sum() > flushed[top]
    assert evicted <= (1.0 + evicts_per_flush(p)) * flushed[top] * (1 + 1e-6)


def test_a_high_osds_evictions_per_flush_follow_its_own_top_pgs_listing() -> None:
    # With a PG HIGH and FULL (evict effort 1.0) on its OSD, that OSD's
    # agent_entry works only it: each completion, try_flush_mark_clean
    # evicts the flushed object (evict mode FULL: no temperature test),
    # then agent_work with one free op meets what lies ahead of its
    # position, here only dirty objects, and flushes the first: one
    # eviction per flush.  The other OSDs (no HIGH PG, low quota) work
    # their own LOW PGs, which pace by their own clean share p (the
    # simulator's LOW reading; the flushed object counted on top, as
    # try_flush_mark_clean does in LOW too).  Their listings do not reach
    # the HIGH OSD's pacing, nor its listing theirs.
    sc = sixteen_pgs_on_four_osds(hit_set_count=0)
    sim = new_sim(sc, Ratios(0.1, 0.6, 0.8))
    fill(sim, 0.9, dirty=False)
    sim.D[:] = sim.C * (0.15 / 0.9)
    sim.C -= sim.D                    # 0.9 full, 0.15 dirty: LOW, SOME
    top = sim.G - 1
    cached = sim.C[top] + sim.D[top]
    sim.D[top] = cached * (0.7 / 0.9)
    sim.C[top] = cached * (0.35 / 0.9)    # 1.05 full, 0.7 dirty: HIGH, FULL
    sim.choose_modes()
    assert sim.flush_mode[top] == FLUSH_HIGH and (sim.flush_mode[:top] == FLUSH_LOW).all()
    assert sim.evict_mode[top] == EVICT_FULL and (sim.evict_mode[:top] == EVICT_SOME).all()
    clean, dirty = sim.objects()
    lp = sim.listing
    lp.pos[:] = 0.0
    lp.clean[:] = (clean / HASH_BINS)[:, None]
    lp.dirty[:] = (dirty / HASH_BINS)[:, None]
    lp.clean[top] = 0.0
    lp.clean[top, -1] = clean[top]    # the HIGH PG's clean objects all just behind it
    lp.here_clean[:] = lp.clean[:, 0]
    lp.here_dirty[:] = lp.dirty[:, 0]
    sim._listing_of = sim._row_sums().tobytes()
    p = clean[0] / (clean[0] + dirty[0])
    flushed, _, evicted = idle_step(sim)
    # the FULL PG holds the HIGH OSD's four ops; the others the LOW OSDs'
    assert flushed[top] > 0 and flushed[:top].sum() > 0
    ceph_most = flushed[top] * 1.0 + flushed[:top].sum() * (1.0 + evicts_per_flush(p))
    assert evicted <= ceph_most * (1 + 1e-6)


def _evict_only_top_pg() -> TierSim:
    """16 PGs on 4 OSDs: one FULL whose dirty level is under the dirty
    ratio (flush IDLE), 15 flushing LOW that do not evict."""
    sc = sixteen_pgs_on_four_osds(200, hit_set_count=0)
    sim = new_sim(sc)
    fill(sim, 0.7, dirty=False)
    sim.D[:] = sim.C * (0.5 / 0.7)
    sim.C -= sim.D                    # 0.7 full, 0.5 dirty: LOW, evict IDLE
    top = sim.G - 1
    cached = sim.C[top] + sim.D[top]
    sim.D[top] = cached * (0.3 / 0.7)
    sim.C[top] = cached * (0.75 / 0.7)    # 1.05 full, 0.3 dirty: flush IDLE, FULL
    sim.choose_modes()
    assert sim.flush_mode[top] == FLUSH_IDLE and sim.evict_mode[top] == EVICT_FULL
    assert (sim.flush_mode[:top] == FLUSH_LOW).all() and (sim.evict_mode[:top] == EVICT_IDLE).all()
    return sim


def test_a_pg_that_evicts_without_flushing_evicts_unpaced_at_the_top_of_its_osd() -> None:
    # agent_entry waits only while agent_flush_quota (low ops less
    # agent_ops) is used up, and agent_work on a PG in flush mode IDLE
    # never spends it: its OSD's agent calls agent_work again as each
    # eviction commits (agent_finish_evict_op), at the rate evictions run
    # with nothing flushing, whatever other OSDs flush.  The FULL PG is at
    # the top of its OSD's queue (effort 1.0, the others idle).
    sim = _evict_only_top_pg()
    top = sim.G - 1
    clean, dirty = sim.objects()
    stop_at = sim.ratios.full * (1.0 - OSD_AGENT_SLOP) * sim.budget / sim.avg
    over = clean[top] + dirty[top] - stop_at
    dt = 0.1
    _, _, evicted = idle_step(sim, dt)
    unpaced = min(over, EVICT_OBJECTS_PER_S_PER_OSD * dt)
    assert evicted >= 0.99 * unpaced


def test_an_osd_whose_top_pg_only_evicts_starts_no_flushes() -> None:
    # agent_entry calls agent_work only on a PG of the top level of its
    # agent_queue (agent_queue.rbegin()); the flushing PGs at level 0 on
    # the FULL PG's OSD get no agent_work while it is there, and it
    # flushes nothing (flush mode IDLE).  So only the three other OSDs
    # flush, two ops each.  (A step short enough that the FULL PG is still
    # evicting at its end: back at its target it leaves the top level, and
    # the level-0 PGs below it get the rest of the step.)
    sim = _evict_only_top_pg()
    sp = sim.sc.sim
    flush_time = (sp.base_latency_ms / 1000 + FLUSH_EXTRA_LATENCY_S
                  + sim.sc.object_size / (sp.base_bandwidth_mib_s * MiB))
    top = sim.G - 1
    clean, dirty = sim.objects()
    stop_at = sim.ratios.full * (1.0 - OSD_AGENT_SLOP) * sim.budget / sim.avg
    dt = 0.05
    assert clean[top] + dirty[top] - stop_at > EVICT_OBJECTS_PER_S_PER_OSD * dt
    flushed, _, _ = idle_step(sim, dt)
    ceph_most = (sim.osds - 1) * OSD_AGENT_MAX_LOW_OPS / flush_time * dt
    assert flushed.sum() <= ceph_most * (1 + 1e-9)


@pytest.mark.xfail(strict=True, reason='flushing LOW the simulator allows p / (1 - p) and two '
                   'spare ops per flush, not the flushed object itself')
def test_flushing_low_each_completed_flush_evicts_its_own_object() -> None:
    # try_flush_mark_clean: `if (!obc->obs.oi.has_manifest() && !fop->op &&
    # agent_state && agent_state->evict_mode != EVICT_MODE_IDLE &&
    # agent_maybe_evict(obc, true))` evicts the object just flushed,
    # whatever the flush mode; FULL skips the temperature test.  So
    # flushing LOW a FULL PG evicts at least one object per completed
    # flush (agent_pacing.py measured 1.7 at a clean share of 0.1).
    sc = sixteen_pgs_on_four_osds(hit_set_count=0)
    sim = new_sim(sc, Ratios(0.4, 0.99, 0.8))
    fill(sim, 1.05, dirty=True)
    sim.C[:] = sim.D * (0.1 / 1.05)
    sim.D -= sim.C                    # 1.05 full, 0.95 dirty: LOW, FULL
    sim.choose_modes()
    assert (sim.flush_mode == FLUSH_LOW).all() and (sim.evict_mode == EVICT_FULL).all()
    _, flushed, evicted = idle_step(sim)
    assert flushed > 0
    assert evicted >= flushed * (1 - 1e-6)


@pytest.mark.xfail(strict=True, reason='with hit sets the simulator thins unpaced evictions by '
                   'the effort but not those paced by flushes')
def test_with_hit_sets_paced_evictions_pass_the_temperature_test_too() -> None:
    # agent_work calls the same agent_maybe_evict(obc, false) whether the
    # agent wakes on a flush completion or not, and try_flush_mark_clean's
    # agent_maybe_evict(obc, true) for the flushed object too: in evict
    # mode SOME each clean object met passes only by the temperature test
    # (`if (1000000 - temp_upper >= evict_effort) return false`).  The
    # simulator lets about the effort's share through where the pool has
    # hit sets (_evict_by_priority); the same share must thin what the
    # agent evicts per flush: here effort 0.4, clean share 0.5, so per
    # flush 0.4 * (1 + 0.5 / 0.5) + E[min(2, Bin(9, 0.2))] = 2.2 at most
    # against 3.0 without hit sets (the simulator's LOW reading).
    evicted = {}
    for count in (0, 4):
        sc = sixteen_pgs_on_four_osds(hit_set_count=count)
        sim = new_sim(sc)
        fill(sim, 0.9, dirty=False)
        sim.D[:] = sim.C * 0.5
        sim.C -= sim.D                # 0.9 full, 0.45 dirty: LOW, SOME at 0.4
        sim.choose_modes()
        assert (sim.flush_mode == FLUSH_LOW).all() and (sim.effort == pytest.approx(0.4))
        _, flushed, evicted_now = idle_step(sim)
        evicted[count] = evicted_now / flushed
    assert evicted[4] <= 0.8 * evicted[0]


def test_a_released_write_counts_as_in_the_current_hit_set() -> None:
    # do_op checks in_hit_set before hit_set->insert(oid), and a requeued
    # op skips the insert (op->hitset_inserted): its first pass put the
    # object in the current set.  So with min_write_recency 1 every write
    # released from FULL is promoted (the throttle aside), however few
    # accesses the current set counts.
    sc = scenario(cache={'hit_set_count': 4, 'min_write_recency': 1})
    sim = new_sim(sc)
    fill(sim, 0.95, dirty=True)
    top = sim.G - 1
    sim.blocked[top] = 3.0
    sim.blocked_since[top] = 0.0
    sim.acc[:] = 0.05
    sim.choose_modes()
    before = sim.totals.cache['num_promote']
    sim.step(0.01, IDLE)
    assert sim.blocked[top] == 0.0
    assert sim.totals.cache['num_promote'] - before == pytest.approx(3.0 * sim.m[top], rel=1e-6)


def test_once_the_top_pg_is_back_at_its_target_its_osd_flushes_the_level_below() -> None:
    # agent_work chooses the PG's mode again before each listing: back at
    # the full ratio less the slop the FULL PG leaves the top level, and
    # agent_entry's next call goes to the level-0 PGs of its OSD.  Here the
    # FULL PG's evictions take 34 objects at 400 a second: 0.085 s of a
    # 0.1 s step, so its OSD's flushing PGs get the last 0.015 s.
    sim = _evict_only_top_pg()
    top = sim.G - 1
    clean, dirty = sim.objects()
    stop_at = sim.ratios.full * (1.0 - OSD_AGENT_SLOP) * sim.budget / sim.avg
    busy = (clean[top] + dirty[top] - stop_at) / EVICT_OBJECTS_PER_S_PER_OSD
    dt = 0.1
    assert 0 < busy < dt
    sp = sim.sc.sim
    flush_time = (sp.base_latency_ms / 1000 + FLUSH_EXTRA_LATENCY_S
                  + sim.sc.object_size / (sp.base_bandwidth_mib_s * MiB))
    mates = (sim.osd_of == sim.osd_of[top]) & (np.arange(sim.G) != top)
    flushed, _, _ = idle_step(sim, dt)
    expected = OSD_AGENT_MAX_LOW_OPS / flush_time * (dt - busy)
    assert float((sim.m * flushed)[mates].sum()) == pytest.approx(expected, rel=1e-6)
