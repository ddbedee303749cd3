"""The tick-cost benchmarks' harness (their figures are printed by
`make bench-module-cost` and `make bench-tick-instructions`, never
asserted): the synthetic state, what one steady tick asks of the mgr, and
how the instruction count is read."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import module_cost as mc


def test_synthetic_state_pairs_each_cache_pool_with_its_base_and_spreads_the_pgs() -> None:
    state = mc.synthetic_state(n_pools=10, n_cache=3, n_pgs=1000)
    pools = state['osd_map']['pools']
    cache = [p for p in pools if p['cache_mode'] != 'none']
    assert len(pools) == 10 and len(cache) == 3
    for p in cache:
        base = next(b for b in pools if b['pool'] == p['tier_of'])
        assert base['tiers'] == [p['pool']] and base['read_tier'] == p['pool']
    assert sum(p['pg_num'] for p in pools) == 1000
    assert len(state['pool_stats']['pool_stats']) == 10


def test_a_steady_tick_reads_pool_stats_once_and_nothing_else() -> None:
    row = mc.measure(n_pools=12, n_cache=4, n_pgs=1200, history=6, ticks=3, mode='warn')
    assert row['get_calls'] == ['pool_stats'] and row['get_calls_per_tick'] == 1
    assert row['tick_ms_median'] > 0 and row['held_mib'] > 0


def test_with_a_sleep_the_ticks_after_it_are_timed_apart_from_back_to_back_ones() -> None:
    row = mc.measure(n_pools=12, n_cache=4, n_pgs=1200, history=6, ticks=3, mode='warn',
                     sleep_s=0.01)
    assert row['after_sleep_ms_median'] > 0 and row['after_sleep_ms_p95'] > 0
    assert row['get_calls_per_tick'] == 1      # over all six ticks, both kinds
    assert 'after_sleep_ms_median' not in mc.measure(n_pools=4, n_cache=1, n_pgs=40, history=4,
                                                     ticks=2, mode='warn')
    both = mc.summary([{**row, 'after_sleep_ms_median': m} for m in (5.0, 3.0, 4.0)])
    assert both['after_sleep_ms_median'] == 4.0
    assert both['after_sleep_ms_median_range'] == [3.0, 5.0]


def test_rounds_are_summarised_by_the_median_of_their_medians() -> None:
    runs = [{'pools': 1, 'tick_ms_median': m, 'tick_ms_p95': 2 * m} for m in (9.0, 7.0, 8.0)]
    row = mc.summary(runs)
    assert row['tick_ms_median'] == 8.0 and row['tick_ms_median_range'] == [7.0, 9.0]
    assert row['tick_ms_p95'] == 16.0 and row['rounds'] == 3


def test_instruction_count_is_read_from_callgrinds_summary() -> None:
    import tick_instructions as ti
    err = ('==123== Events    : Ir\n==123== Collected : 7227429187\n==123==\n'
           '==123== I   refs:      7,227,429,187\n')
    assert ti.collected(err) == 7227429187
    assert ti.collected('valgrind: command not found\n') is None


def test_the_measured_program_fills_and_ticks_without_valgrind() -> None:
    import tick_instructions as ti
    assert ti.main(['--run-ticks', '2', '--pools', '6', '--cache-pools', '2', '--pgs', '600',
                    '--history', '4']) == 0


def test_real_mgr_bench_builds_each_tier_in_the_order_the_mons_need() -> None:
    import mgr_tick_cost as mtc
    cmds = mtc.tier_commands(7, pg_num=2)
    prefixes = [c['prefix'] for c in cmds]
    # Both pools exist before the tier links them; the overlay comes after
    # the cache mode, and the hit sets and target go on the cache pool.
    assert prefixes[:4] == ['osd pool create', 'osd pool application enable'] * 2
    assert prefixes[4:7] == ['osd tier add', 'osd tier cache-mode', 'osd tier set-overlay']
    assert cmds[4] == {'prefix': 'osd tier add', 'pool': 'base7', 'tierpool': 'cache7'}
    assert cmds[5]['mode'] == 'writeback'
    sets = {c['var']: c['val'] for c in cmds[7:]}
    assert all(c['pool'] == 'cache7' for c in cmds[7:])
    assert sets == {'hit_set_type': 'bloom', 'hit_set_count': '4', 'hit_set_period': '60',
                    'target_max_bytes': str(mtc.TARGET_MAX_BYTES)}
    assert {c['pg_num'] for c in cmds if c['prefix'] == 'osd pool create'} == {2}


def test_real_mgr_bench_prints_the_machines_speed_beside_each_row() -> None:
    """A tick's CPU ms on the shared VM says as much about the hour as about
    the module: each row carries the reference loop timed around its
    ticks, and rows recorded before it was kept say they have none."""
    import machine_speed
    import mgr_tick_cost as mtc
    row = {'cache_pools': 64, 'pools': 129, 'cpu_ms_median': 9.5, 'cpu_ms_max': 14.0,
           'wall_ms_last': 9.0, 'cpu_ms_median_parts': {'pool_stats': 2.0}}
    lines = mtc.table([{**row, 'reference_ms': [21.6, 22.4]}, row]).splitlines()
    assert 'REF MS' in lines[0]
    assert ' 22/22 ' in lines[1] and ' - ' in lines[2]
    assert machine_speed.reference_ms() > 0


def test_real_mgr_bench_wants_ascending_steps() -> None:
    import mgr_tick_cost as mtc
    import pytest
    for bad in ('64,1', '0,4', '4,4'):
        with pytest.raises(SystemExit):
            mtc.main(['--steps', bad])


def test_real_mgr_bench_plain_pools_are_one_pg_pools_outside_any_tier() -> None:
    import mgr_tick_cost as mtc
    cmds = mtc.plain_pool_commands(3)
    assert [c['prefix'] for c in cmds] == ['osd pool create', 'osd pool application enable']
    assert cmds[0]['pool'] == cmds[1]['pool'] == 'plain3' and cmds[0]['pg_num'] == 1


def test_real_mgr_bench_wants_more_pools_than_its_tiers_make() -> None:
    import mgr_tick_cost as mtc
    import pytest
    with pytest.raises(SystemExit):
        mtc.main(['--steps', '1,64', '--pools', '128'])


def test_real_mgr_bench_under_load_sizes_the_tier_so_writes_keep_dirtying_it() -> None:
    import mgr_tick_cost as mtc
    cmds = mtc.tier_commands(0, pg_num=1, target=mtc.LOAD_TARGET_MAX_BYTES,
                             ratios=mtc.LOAD_RATIOS)
    sets = {c['var']: c['val'] for c in cmds if c['prefix'] == 'osd pool set'}
    assert sets['target_max_bytes'] == str(mtc.LOAD_TARGET_MAX_BYTES)
    assert sets['cache_target_dirty_ratio'] == '0.1'
    # The load's keys stay cached (so every write lands in the cache) and
    # are well over the dirty ratio (so the agent flushes what is written).
    keys = mtc.LOAD_KEYS_PER_POOL * mtc.LOAD_OBJECT_BYTES
    assert 0.1 * mtc.LOAD_TARGET_MAX_BYTES < keys <= 0.5 * mtc.LOAD_TARGET_MAX_BYTES


def test_pinning_puts_the_measured_process_on_one_cpu_and_the_rest_on_the_others() -> None:
    import os
    import subprocess

    import cpu_placement
    cpus = os.sched_getaffinity(0)
    assert len(cpus) >= 2, 'the benchmark machines have two CPUs'
    # Two processes of our own, each with a second thread: every thread moves.
    code = 'import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); ' \
           'time.sleep(60)'
    a, b = (subprocess.Popen([sys.executable, '-c', code]) for _ in range(2))
    try:
        time.sleep(0.3)
        assert len(cpu_placement.threads(a.pid)) == 2
        placed = cpu_placement.split([a.pid], [b.pid], cpus)
        assert placed['measured'] == {max(cpus)} and placed['rest'] == cpus - {max(cpus)}
        assert all(os.sched_getaffinity(t) == {max(cpus)} for t in cpu_placement.threads(a.pid))
        assert all(os.sched_getaffinity(t) == cpus - {max(cpus)}
                   for t in cpu_placement.threads(b.pid))
        cpu_placement.share([a.pid, b.pid], cpus)
        assert all(os.sched_getaffinity(t) == cpus
                   for p in (a.pid, b.pid) for t in cpu_placement.threads(p))
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
    assert cpu_placement.threads(a.pid) == [] and cpu_placement.set_cpus([a.pid], cpus) == 0


def test_real_mgr_bench_table_shows_io_and_placement_only_when_a_run_has_both_kinds() -> None:
    import mgr_tick_cost as mtc
    row = {'cache_pools': 64, 'pools': 129, 'cpu_ms_median': 9.5, 'cpu_ms_max': 12.0,
           'wall_ms_last': 10.0, 'cpu_ms_median_parts': {'pool_stats': 2.0}, 'io': 'load'}
    plain = mtc.table([row])
    assert 'IO' not in plain and 'CPUS' not in plain and 'pool_stats 2.00' in plain
    both = mtc.table([{**row, 'io': 'idle'}, {**row, 'placement': 'mgr on its own CPU'}])
    head, idle, pinned = both.splitlines()
    assert 'IO' in head and 'CPUS' in head
    assert 'idle' in idle and 'shared' in idle and 'load' in pinned and 'own CPU' in pinned


def test_recorded_counters_go_on_past_the_recording_without_a_quiet_interval() -> None:
    from loaded_tiers import Recorded, load_fixture
    rec = Recorded(load_fixture())
    assert len(rec) == 4 and rec.ticks >= 100 and rec.tick_s == 2
    assert rec.cache_pool['tier_of'] == rec.base_pool['pool']
    assert rec.cache_pool['target_max_bytes'] > 0
    _, first, _ = rec.stat_sums(0, 0)
    _, second, _ = rec.stat_sums(0, 1)
    _, last, _ = rec.stat_sums(0, rec.ticks - 1)
    _, again, base_again = rec.stat_sums(0, rec.ticks)
    assert last['num_write'] > first['num_write']        # the tiers were written to
    # Round again: the cumulative counters keep growing, by the first interval.
    assert again['num_write'] - last['num_write'] == second['num_write'] - first['num_write']
    assert again['num_objects'] == first['num_objects']  # levels repeat
    assert set(again) == set(base_again) == set(rec.names)
    assert rec.stat_sums(4, 7) == rec.stat_sums(0, 7)     # tier i replays recorded i % 4


def test_recorded_counters_drive_every_cache_pool_of_the_synthetic_state() -> None:
    from loaded_tiers import Recorded, load_fixture
    rec = Recorded(load_fixture())
    state = mc.synthetic_state(n_pools=12, n_cache=5, n_pgs=120, recorded=rec)
    caches = [p for p in state['osd_map']['pools'] if p['cache_mode'] != 'none']
    assert len(caches) == 5
    assert {p['target_max_bytes'] for p in caches} == {rec.cache_pool['target_max_bytes']}
    mc.advance(state, 3, rec)
    stats = state['pool_stats']['pool_stats']
    for i in range(5):
        _, cache, base = rec.stat_sums(i, 3)
        assert stats[2 * i + 1]['stat_sum'] == cache and stats[2 * i]['stat_sum'] == base
    row = mc.measure(n_pools=12, n_cache=5, n_pgs=120, history=6, ticks=3, mode='warn',
                     recorded=rec)
    assert row['get_calls'] == ['pool_stats'] and row['tick_ms_median'] > 0
