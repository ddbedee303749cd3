"""switch_time.py: the change lands at the time asked for, the first row is
the static run with the new value, and bad ratios are refused (simulator,
on a short read scenario)."""

import math
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import policies
import switch_time
from short_reads import SHORT_READS
from simulator.run import simulate
from simulator.tier import TierSim

FULL = 'cache_target_full_ratio'


def test_the_first_row_is_the_static_run_with_the_new_value() -> None:
    res = switch_time.measure([SHORT_READS], (0.4, 0.6, 0.8), FULL, 0.6, [20.0], seeds=2,
                              jobs=1)
    rows = res['short-reads']
    assert list(rows) == [switch_time.FROM_START, 20.0]
    for seed in range(2):
        static = simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.6'), seed=seed)
        assert rows[switch_time.FROM_START][seed] == static.metrics['hit_ratio']
    assert all(math.isfinite(v) for v in rows[20.0])


def test_the_change_lands_at_its_time() -> None:
    seen: List[Tuple[float, float]] = []

    def watch_and_change(t: float, sim: TierSim) -> None:
        seen.append((t, sim.ratios.full))
        if t >= 20.0 and sim.ratios.full > 0.6:
            sim.pool_set(FULL, '0.6')
    # one_run's change, replayed with a watcher: the ratio moves once, at 20 s
    job = (SHORT_READS, (0.4, 0.6, 0.8), FULL, 0.6, 20.0, 0)
    got = switch_time.one_run(job)
    assert math.isfinite(got)
    late = simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.8'), seed=0,
                    observe=watch_and_change)
    assert late.metrics['hit_ratio'] == got
    before = [f for t, f in seen if t < 20.0]
    assert before and all(f == pytest.approx(0.8) for f in before)
    after = [f for t, f in seen if t > 20.0]
    assert after and all(f == pytest.approx(0.6) for f in after)
    # a change later than the run is an error, not a silent static run
    with pytest.raises(AssertionError, match='ended before'):
        switch_time.one_run((SHORT_READS, (0.4, 0.6, 0.8), FULL, 0.6, 400.0, 0))


def test_a_value_that_breaks_the_order_is_refused() -> None:
    with pytest.raises(ValueError, match='dirty <= dirty_high <= full'):
        switch_time.with_value((0.4, 0.6, 0.8), FULL, 0.5)
    assert switch_time.with_value((0.4, 0.6, 0.8), 'cache_target_dirty_ratio', 0.1) == \
        (0.1, 0.6, 0.8)
    with pytest.raises(SystemExit):
        switch_time.main(['--scenarios', 'scan-pollutes-hot-set', '--set', f'{FULL}=0.5'])
    with pytest.raises(SystemExit):
        switch_time.main(['--scenarios', 'no-such-scenario'])


def test_the_report_has_a_row_per_time_and_the_difference_from_t0() -> None:
    res = {'short-reads': {0.0: [0.5, 0.7], 20.0: [0.4, 0.6]}}
    text = switch_time.report([SHORT_READS], res, (0.4, 0.6, 0.8), FULL, 0.9, 2)
    assert '| from t=0 | 0.5 | 0.7 | 0.6 | +0 |' in text
    assert '| 20 | 0.4 | 0.6 | 0.5 | -0.1 |' in text
    assert 'hit_ratio (higher is better)' in text
