"""tick_split.py's harness (its figures are printed, never asserted): the
decisions are timed inside the tick's models-and-law step, and the timer
is taken off Tuner again."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tick_split
from loaded_tiers import Recorded, _tiertune, load_fixture


def test_the_decisions_are_a_part_of_the_step_and_the_tuner_is_left_as_it_was() -> None:
    tuner_cls = _tiertune('tuner').Tuner
    real = tuner_cls._decide_pool
    row = tick_split.split(6, 2, 64, 3, Recorded(load_fixture()))
    assert tuner_cls._decide_pool is real
    assert 0 < row['decisions_ms'] < row['models_and_law_ms'] <= row['tick_ms']
    assert row['fits_and_glue_ms'] > 0
