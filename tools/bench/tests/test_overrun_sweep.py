"""overrun_sweep.py: the landing value it sets reaches the module's own law
(and only for that run), and the report lays the sweep out (simulator, on a
short copy of the cluster overflow scenario)."""

import dataclasses
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import overrun_sweep
import policies
import scenario as scn
from simulator.run import simulate

HERE = Path(__file__).resolve().parents[1]


def _short_overflow() -> scn.Scenario:
    # One 40 s bench four times the cache, its rest, and the next bench: the
    # law sees the first surge overrun the cache and places dirty_high.
    sc = scn.load(HERE / 'scenarios' / 'cluster' / 'overflow-4m-fio.yaml')
    return dataclasses.replace(sc, repeat=2)


def test_the_landing_value_sets_dirty_high_in_the_modules_law_for_that_run_only() -> None:
    sc = _short_overflow()
    law = overrun_sweep.law_landing()
    plain = simulate(sc, policies.parse('tiertune'), seed=0)
    # At the law's own value the sweep's run is the plain run.
    assert overrun_sweep.run_one(sc, 'tiertune', law, 0) == (
        plain.metrics['write_lat_ms_p99_after_first'], plain.metrics['write_lat_ms_p99'])
    # Another value moves dirty_high: the law's decisions come from the
    # module's code with the value set.
    lowest = min(c['dirty_high'] for c in plain.ratio_changes)
    assert math.isclose(lowest, 0.1 + law), plain.ratio_changes
    assert overrun_sweep.law_landing() == law           # put back
    with overrun_sweep.landing_set(0.2):
        lower = simulate(sc, policies.parse('tiertune'), seed=0)
    assert overrun_sweep.law_landing() == law
    assert math.isclose(min(c['dirty_high'] for c in lower.ratio_changes), 0.3)


def test_the_report_has_a_row_per_scenario_and_speed_and_marks_the_laws_column() -> None:
    sc = _short_overflow()
    fast = overrun_sweep.with_cache_speed(sc, 750)
    assert fast.sim.cache_bandwidth_mib_s == 750 and sc.sim.cache_bandwidth_mib_s == 200
    scs = [('short, cache 200', sc), ('short, cache 750', fast)]
    law = overrun_sweep.law_landing()
    res = overrun_sweep.sweep(scs, [0.2, law], seeds=1, jobs=1)
    assert set(res) == {(label, col) for label, _ in scs
                        for col in ('defaults', 'landing 0.2', f'landing {law:g}')}
    text = overrun_sweep.report(scs, [0.2, law], 1, res)
    assert f'landing {law:g} (the law)' in text
    rows = [ln for ln in text.splitlines() if ln.startswith('| short')]
    assert len(rows) == 2 and all(ln.count('/') == 3 for ln in rows)
    # The sweep's figures are the runs' own.
    assert res[('short, cache 750', f'landing {law:g}')][0] == overrun_sweep.run_one(
        fast, 'tiertune', law, 0)
