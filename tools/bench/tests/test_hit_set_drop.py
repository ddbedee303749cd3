"""hit_set_drop.py: without the drop a pool set keeps the PGs' in-memory
hit sets and their roll time, only inside its block; a static policy
(no pool set) reads the same both ways (simulator, a short read scenario)."""

import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hit_set_drop
import policies
from short_reads import SHORT_READS
from simulator.run import simulate
from simulator.tier import TierSim

FULL = 'cache_target_full_ratio'


def test_a_pool_set_keeps_the_hit_sets_only_inside_the_block() -> None:
    kept: List[bool] = []

    def change_at_20s(t: float, sim: TierSim) -> None:
        if t >= 20.0 and sim.ratios.full > 0.6:
            acc, roll = sim.acc.copy(), sim.next_roll
            assert acc.any()               # some accesses counted by then
            assert sim.pool_set(FULL, '0.6') is None
            kept.append(bool((sim.acc == acc).all() and sim.next_roll == roll))

    original = TierSim.pool_set
    with hit_set_drop.keeping_hit_sets():
        simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.8'), observe=change_at_20s)
    assert TierSim.pool_set is original
    simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.8'), observe=change_at_20s)
    assert kept == [True, False]           # kept in the block, dropped after it


def test_a_static_policy_reads_the_same_either_way() -> None:
    out = hit_set_drop.measure(SHORT_READS, 'static:0.4,0.6,0.9')
    assert out[hit_set_drop.MODELLED] == out[hit_set_drop.KEPT] > 0
