"""fit_cost.py's harness (its figures are printed, never asserted): the
history it fits is one cache pool's, of the length asked for."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fit_cost
from loaded_tiers import Recorded, load_fixture


def test_one_time_per_run_over_a_history_of_the_length_asked() -> None:
    ms = fit_cost.fit_ms(12, 3, Recorded(load_fixture()))
    assert len(ms) == 3 and all(m > 0 for m in ms)
