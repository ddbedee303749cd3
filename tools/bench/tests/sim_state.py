"""A TierSim built for the simulator's unit tests and its PGs filled by
hand: the state a test then steps from."""

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenario as scn
from simulator.tier import Ratios, TierSim
from simulator.workload import make_bins


def new_sim(sc: scn.Scenario, ratios: Optional[Ratios] = None) -> TierSim:
    """sc's tier at ratios (Ceph's defaults unless given: a fresh Ratios,
    since tests set the sim's ratios in place), over two key bins (5000
    and 200 keys)."""
    return TierSim(sc, make_bins([5000, 200]), ratios or Ratios(0.4, 0.6, 0.8))


def fill(sim: TierSim, frac: float, dirty: bool) -> None:
    """Every PG at frac of its budget, all dirty or all clean, spread over
    its objects as its keys are."""
    per_pg = sim.budget / sim.avg
    x = sim.N * (frac * per_pg / sim.N.sum(axis=1))[:, None]
    sim.C[:], sim.D[:] = (0.0, x) if dirty else (x, 0.0)
