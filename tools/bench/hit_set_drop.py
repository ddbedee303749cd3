#!/usr/bin/python3
"""What the hit sets an `osd pool set` drops cost a run (simulator): a
shipped scenario under a policy twice, as the simulator models the OSD
(every pool set drops the PGs' in-memory hit sets) and with the drop taken
out (the in-memory hit sets and their roll time kept over a pool set).
Nothing but the drop differs; the primary metric of each is printed.

    hit_set_drop.py --scenario scan-pollutes-hot-set [--policy tiertune] [--seed 0]

The two read scenarios trail best-static on seed 0 by a few thousandths of
hit ratio; this says how much of tiertune's run is the drop
(bench-results/sim/switch-time-seed0.md)."""

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import run  # noqa: E402
import scenario as scn  # noqa: E402
from simulator.run import simulate  # noqa: E402
from simulator.tier import TierSim  # noqa: E402

MODELLED, KEPT = 'as modelled (the drop)', 'the drop taken out'


@contextlib.contextmanager
def keeping_hit_sets() -> Iterator[None]:
    """TierSim.pool_set without the drop, for the block's runs only."""
    pool_set = TierSim.pool_set

    def keep(self: TierSim, var: str, val: str) -> Optional[str]:
        acc, next_roll = self.acc.copy(), self.next_roll
        err = pool_set(self, var, val)
        self.acc[:], self.next_roll = acc, next_roll
        return err
    TierSim.pool_set = keep  # type: ignore[method-assign]
    try:
        yield
    finally:
        TierSim.pool_set = pool_set  # type: ignore[method-assign]


def measure(sc: scn.Scenario, policy: str, seed: int = 0) -> Dict[str, float]:
    """The scenario's primary metric, as modelled and without the drop."""
    metric, _ = run.primary_metric(sc)
    spec = policies.parse(policy)
    out = {MODELLED: simulate(sc, spec, seed=seed).metrics[metric]}
    with keeping_hit_sets():
        out[KEPT] = simulate(sc, spec, seed=seed).metrics[metric]
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scenario', required=True)
    ap.add_argument('--policy', default='tiertune')
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args(argv)
    (sc,) = scn.load_shipped([args.scenario])
    out = measure(sc, args.policy, args.seed)
    print(f'{args.scenario}, seed {args.seed}, policy {args.policy}: '
          f'{run.primary_metric(sc)[0]}')
    for name, v in out.items():
        print(f'  {name:<24} {v:.6f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
