"""TIERTUNE_CACHE_FULL_RISK on the simulator (a stand-in for clusters and
workloads not built here: named sim), through full_risk_check.py, which
runs the module's own health checks on the tuner's views every step."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import full_risk_check as frc
import scenario as scn

HORIZON_S = 600.0


def _trace(name: str) -> frc.Trace:
    return frc.trace(scn.load(scn.shipped()[name]), seed=0)


def test_sim_reads_alone_never_raise_the_full_risk_check() -> None:
    tr = _trace('scan-pollutes-hot-set')
    # Promotions fill the cache, and the fill alone is predicted to reach
    # 100% within the horizon; eviction holds it at the full ratio, and
    # no write ever waits.
    assert tr.predicted and not tr.blocked
    assert tr.raised == []


def test_sim_write_bursts_that_fit_never_raise_the_full_risk_check() -> None:
    tr = _trace('bursty-write-fits')
    # Each burst's fill growth is predicted to fill the cache; each fits.
    assert tr.predicted and not tr.blocked
    assert tr.raised == []


def test_sim_writes_that_block_are_warned_once_the_model_is_fitted() -> None:
    tr = _trace('steady-write-above-backend')
    assert tr.raised, 'the check was never raised'
    later = [t for t in tr.blocked if t >= tr.raised[0]]
    assert later, 'no write blocked after the model was fitted: the test proves nothing'
    assert frc._preceded(later, tr.raised, HORIZON_S) == len(later)
    # Raised once and held, not flipped with single ticks (16 raises in
    # this run before health.FullRiskHold).
    assert tr.raises == 1


def test_report_has_a_row_per_run() -> None:
    text = frc.report([scn.load(scn.shipped()['osiris-rados-bench-4m'])], seeds=1)
    header, *rows = [line for line in text.splitlines() if line.startswith('| ')]
    assert header.startswith('| scenario | seed |')
    (row,) = rows
    assert row.startswith('| osiris-rados-bench-4m | 0 | 540 |')


def test_followed_and_preceded_count_within_the_window() -> None:
    assert frc._followed([0.0, 10.0, 50.0], [12.0, 20.0], 5.0) == 1
    assert frc._preceded([12.0, 20.0, 30.0], [10.0], 15.0) == 2
