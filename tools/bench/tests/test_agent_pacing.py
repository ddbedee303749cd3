"""The agent-pacing measurement's arithmetic (pure: no cluster here; the
measurement itself needs one and is run by hand, see its docstring)."""

import json
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agent_pacing as ap


def test_intervals_track_the_clean_share_as_objects_are_flushed_and_evicted() -> None:
    samples = [{'t': 0.5, 'tier_clean': 2.0, 'tier_evict': 6.0},
               {'t': 1.0, 'tier_clean': 4.0, 'tier_evict': 8.0}]
    first, second = ap.intervals(clean=60, dirty=40, samples=samples)
    assert (first.t0, first.t1, first.flushed, first.evicted) == (0.0, 0.5, 2.0, 6.0)
    assert first.clean_share == 0.6
    # 60 clean, 6 evicted, 2 flushed clean: 56 clean of 94 held
    assert second.clean_share == 56 / 94
    assert (second.flushed, second.evicted) == (2.0, 2.0)


def test_evictions_per_flush_count_only_intervals_near_the_starting_share() -> None:
    near = ap.Interval(0.0, 1.0, 0.7, flushed=4, evicted=12)
    also = ap.Interval(1.0, 2.0, 0.65, flushed=6, evicted=18)
    drained = ap.Interval(2.0, 3.0, 0.2, flushed=0, evicted=40)     # clean part nearly gone
    assert ap.evicts_per_flush([near, also, drained]) == 3.0
    assert ap.evicts_per_flush([ap.Interval(0.0, 1.0, 0.9, flushed=0, evicted=30)]) is None
    assert ap.evicts_per_flush([]) is None


def test_report_prints_each_interval_and_the_ratio() -> None:
    run = {'dirty_share': 0.5, 'high': True, 'clean': 10, 'dirty': 10,
           'samples': [{'t': 1.0, 'tier_clean': 2.0, 'tier_evict': 4.0}]}
    text = ap.report(run)
    assert 'flushing HIGH' in text and '0.50' in text
    assert text.rstrip().endswith('2.00')


def test_print_runs_prints_each_report_and_keeps_every_run_so_far(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'runs.json'
    seen_in_file: List[int] = []

    def runs() -> Iterator[Dict[str, Any]]:
        for k in range(2):
            yield {'k': k}
            seen_in_file.append(len(json.loads(out.read_text())) if out.exists() else 0)

    ap.print_runs(runs(), lambda r: f'run {r["k"]}', out)
    assert capsys.readouterr().out.splitlines() == ['run 0', 'run 1']
    assert seen_in_file == [1, 2]            # written after each run, not only at the end
    assert json.loads(out.read_text()) == [{'k': 0}, {'k': 1}]


def test_held_off_spec_keeps_the_agent_idle_and_the_tier_bare() -> None:
    spec = ap.held_off_spec(4 << 30)
    assert spec.target_max_bytes == 4 << 30 and spec.hit_set_count == 0
    assert (spec.dirty_ratio, spec.dirty_high_ratio, spec.full_ratio) == (0.9, 0.95, 0.99)
