"""warm_start.py and the simulator's lead-in: the module's ticks before t=0
reach the run (a long lead lets it fit the idle tier and move the ratios
before the workload starts; the suite's lead does not), and the report lays
the columns out (simulator, on a short read scenario)."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import policies
import warm_start
from short_reads import SHORT_READS
from simulator.run import LEAD_IN_TICKS, simulate


def test_a_long_lead_lets_the_module_act_on_the_idle_tier_before_the_workload() -> None:
    cold = simulate(SHORT_READS, policies.parse('tiertune'), seed=0)
    warm = simulate(SHORT_READS, policies.parse('tiertune'), seed=0, lead_in_ticks=9)
    defaults = dict(zip(('dirty', 'dirty_high', 'full'), policies.CEPH_DEFAULTS, strict=True))
    # The suite's lead: no fitted model yet, the workload meets Ceph's defaults.
    assert {k: cold.ratio_changes[0][k] for k in defaults} == defaults
    assert cold.params['tiertune_lead_in_s'] == LEAD_IN_TICKS * policies.TIERTUNE_SLEEP_INTERVAL_S
    # Nine ticks: the module fitted the idle tier and moved the ratios.
    assert {k: warm.ratio_changes[0][k] for k in defaults} != defaults
    assert warm.params['tiertune_lead_in_s'] == 90.0
    # Static policies have no module to lead in.
    assert simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.8'),
                    seed=0).params['tiertune_lead_in_s'] == 0.0
    with pytest.raises(ValueError):
        simulate(SHORT_READS, policies.parse('tiertune'), seed=0, lead_in_ticks=0)


def test_the_report_puts_each_lead_beside_the_defaults_and_the_pick() -> None:
    res = warm_start.measure([SHORT_READS], [LEAD_IN_TICKS, 9], seeds=1, jobs=1)
    (r,) = res
    assert set(r.runs) == {'Ceph defaults', 'best-static pick', warm_start.column(2),
                           warm_start.column(9)}
    # The figures are the runs' own (a read scenario: no p99 write, NaN).
    for col, policy, lead in ((warm_start.column(9), 'tiertune', 9),
                              ('best-static pick', r.pick, LEAD_IN_TICKS)):
        got, own = r.runs[col][0], warm_start.figures(SHORT_READS, policy, 0, lead)
        assert (got.primary, got.start) == (own.primary, own.start)
        assert math.isnan(got.after_first) and math.isnan(own.after_first)
    text = warm_start.report(res, [LEAD_IN_TICKS, 9], 1)
    row = [ln for ln in text.splitlines() if ln.startswith('| short-reads')]
    assert len(row) == 1 and row[0].count('|') == 6
    notes = [ln for ln in text.splitlines() if ln.startswith('- short-reads')]
    assert len(notes) == 2 and all(f'({r.pick})' in ln and 'of 1 seeds' in ln for ln in notes)
    # Seed 0's figures, the pick's beside tiertune's, with the suite's verdict.
    pick = r.runs['best-static pick'][0].primary
    assert f'against {pick:.6g}' in notes[0]
    # The verdict agrees with the figures it prints (hit ratio: higher wins).
    for note, col in zip(notes, (warm_start.column(LEAD_IN_TICKS), warm_start.column(9)),
                         strict=True):
        mine = r.runs[col][0].primary
        assert f'seed 0 {mine:.6g} against' in note
        assert note.endswith('(PASS)' if mine >= pick else '(FAIL)'), (note, mine, pick)
    assert 'tiertune, lead 90 s' in notes[1]
