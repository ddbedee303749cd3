"""Clients from a scenario's phases, as fluid demand over key bins.

Keys are RADOS objects `0..count-1` of one namespace shared by all phases
(a hot-read phase over 20,000 keys reads the first 20,000 objects a burst
over 100,000 wrote).  Tracking 10^5..10^6 objects one by one for a day of
simulated seconds is too slow, so keys are grouped into bins of keys with
nearly the same access probability: geometric in rank (zipf's probability
changes by at most BIN_GROWTH^theta across a bin), split at every phase's
key count.  Within a bin every object is alike.

`sequential` keys are modelled as uniform over the range: a scan over far
more objects than the cache holds re-touches nothing while it is still
cached, and uniform access over the range gives the same (near-zero) hit
ratio.  Stated in the docs as a simplification.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scenario import Keys, Phase, Scenario

# Bin edges grow by this factor in rank: fine enough that zipf(0.99)'s
# probability varies less than 1.3x inside a bin.
BIN_GROWTH = 1.3


@dataclass(frozen=True)
class KeyBins:
    edges: np.ndarray        # bin b holds keys [edges[b], edges[b+1])
    sizes: np.ndarray        # objects per bin

    @property
    def count(self) -> int:
        return int(self.sizes.size)


def make_bins(counts: Sequence[int]) -> KeyBins:
    top = max(counts)
    edges = {0, top}
    edges.update(int(c) for c in counts)
    x = 1.0
    while x < top:
        edges.add(int(x))
        x *= BIN_GROWTH
    e = np.array(sorted(edges), dtype=np.int64)
    return KeyBins(edges=e, sizes=np.diff(e).astype(float))


def per_object_probability(keys: Keys, bins: KeyBins) -> np.ndarray:
    """Per bin: the probability that one op touches a given object of that
    bin (so sum(sizes * p) == 1)."""
    n = keys.count
    lo = np.minimum(bins.edges[:-1], n)
    hi = np.minimum(bins.edges[1:], n)
    if keys.dist == 'zipf':
        assert keys.theta is not None
        ranks = np.arange(1, n + 1, dtype=float)
        cum = np.concatenate(([0.0], np.cumsum(ranks ** -keys.theta)))
        mass = (cum[hi] - cum[lo]) / cum[-1]
    else:
        mass = (hi - lo) / float(n)
    with np.errstate(invalid='ignore', divide='ignore'):
        p = np.where(bins.sizes > 0, mass / bins.sizes, 0.0)
    return p


@dataclass(frozen=True)
class Demand:
    """What the clients of one phase offer."""
    phase: str
    read_fraction: float          # of ops
    threads: int
    block_size: int
    rate_bytes_s: Optional[float]  # None: closed loop, as fast as latency allows
    probability: np.ndarray       # per object, per bin (see per_object_probability)

    @property
    def active(self) -> bool:
        return self.threads > 0


IDLE = Demand(phase='idle', read_fraction=0.0, threads=0, block_size=0, rate_bytes_s=0.0,
              probability=np.zeros(0))


class Timeline:
    """The scenario's phases in time, each turned into a Demand once."""

    def __init__(self, scenario: Scenario, bins: KeyBins) -> None:
        self.starts: List[float] = []
        self.demands: List[Demand] = []
        cache: Dict[Tuple[str, int], Demand] = {}
        for start, ph in scenario.timeline():
            key = (ph.name, id(ph))
            if key not in cache:
                cache[key] = demand(ph, bins)
            self.starts.append(start)
            self.demands.append(cache[key])
        self.end = scenario.duration_s
        self._i = 0

    def at(self, t: float) -> Demand:
        """The demand at time t (t only moves forward)."""
        while self._i + 1 < len(self.starts) and t >= self.starts[self._i + 1]:
            self._i += 1
        return self.demands[self._i]


def demand(ph: Phase, bins: KeyBins) -> Demand:
    if ph.op == 'idle' or ph.keys is None:
        return Demand(phase=ph.name, read_fraction=0.0, threads=0, block_size=0,
                      rate_bytes_s=0.0, probability=np.zeros(bins.count))
    rf = {'read': 1.0, 'write': 0.0}.get(ph.op, ph.read_fraction or 0.0)
    rate = None if ph.rate_mib_s is None else ph.rate_mib_s * (1 << 20)
    return Demand(phase=ph.name, read_fraction=float(rf), threads=ph.threads,
                  block_size=ph.block_size, rate_bytes_s=rate,
                  probability=per_object_probability(ph.keys, bins))


def all_key_counts(scenario: Scenario) -> List[int]:
    return [p.keys.count for p in scenario.phases if p.keys is not None] or [1]
