"""full_spells.py's arithmetic (pure logic: a hand-made trace stands in for
a cluster run) and its simulator side on a short scenario."""

import sys
from pathlib import Path
from typing import Any, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import full_spells
import scenario as scn
from record import METRIC_KEYS, RunRecord


def test_a_spell_runs_from_its_first_full_sample_to_the_first_sample_after_it() -> None:
    pts: List[full_spells.Point] = [(0.0, False, 10, 5), (1.0, True, 65, 60),
                                    (2.0, True, 66, 61), (4.0, False, 60, 50),
                                    (5.0, True, 70, 70)]
    a, b = full_spells.spells(pts, 1.0)
    assert (a.start, a.length, a.objects, a.dirty) == (1.0, 3.0, 65, 60)
    # still FULL when the trace ends: up to the last sample plus one step
    assert (b.start, b.length) == (5.0, 1.0)
    assert full_spells.spells([], 1.0) == []


def _record(samples: List[List[Any]]) -> RunRecord:
    m: dict = dict.fromkeys(METRIC_KEYS, 0.0)
    m.update(blocked_write_s=7.0, write_lat_ms_p99=900.0)
    return RunRecord(scenario='x', policy='static:0.4,0.6,0.8', backend='cluster', metrics=m,
                     params={'pg_trace': {'fields': ['num_evict_mode_full', 'num_objects',
                                                     'num_objects_dirty'],
                                          'budget_objects': 64, 'samples': samples}})


def test_cluster_summary_from_a_hand_made_trace() -> None:
    rec = _record([[0.0, {'3.0': [0, 40, 10], '3.1': [1, 66, 66]}],
                   [1.0, {'3.0': [1, 65, 33], '3.1': [1, 66, 60]}],
                   [2.0, {'3.0': [0, 60, 30], '3.1': [0, 60, 50]}]])
    s = full_spells.cluster_summary(rec)
    assert s.full_pg_s == 3.0 and len(s.spells) == 2
    row = s.row().split(' | ')
    assert row[:4] == ['cluster', '3', '2', '1.5'] and row[5] == '2.0'
    assert row[6] == f'{(65 + 66) / 2 / 64:.2f}' and row[8:] == ['7', '900']
    with pytest.raises(ValueError):
        full_spells.cluster_summary(RunRecord(scenario='x', policy='p', backend='cluster',
                                              metrics=dict.fromkeys(METRIC_KEYS, 0.0)))


def test_the_simulator_side_finds_the_full_spells_of_an_overrun_cache() -> None:
    sc = scn.load(scn.shipped()['bursty-write-fits'])
    s = full_spells.sim_summary(sc, 'static:0.4,0.6,0.8', 0)
    # Ceph's defaults: the bursts meet a cache 40% dirty and PGs go FULL
    assert s.blocked_s is not None
    assert s.spells and s.full_pg_s >= s.blocked_s > 0
    assert all(sp.objects >= 0.9 * s.budget for sp in s.spells)
