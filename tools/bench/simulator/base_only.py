"""The base pool alone: the `no-tier` policy, clients with no cache tier in
their path (the OSiRIS site's "without the cache tier" run, 375 MB/s
against 1235 MB/s with it).  On the cluster the tier's overlay is removed;
here every op goes to the base's bandwidth and latency, with the same
client model as TierSim (closed loop, or open loop at a rate; latency =
fixed + transfer / (1 - utilization)), so the two read side by side.
"""

from typing import Tuple

from scenario import Scenario

from simulator.tier import UTILIZATION_CAP, MiB, Ratios, StepResult, Totals
from simulator.workload import Demand


class BaseOnlySim:
    """What TierSim offers simulate(), for a pool with no cache in front."""

    def __init__(self, scenario: Scenario, ratios: Ratios) -> None:
        self.sc = scenario
        # The cache pool keeps its ratios (the overlay is what goes), but
        # nothing reaches it: they change nothing.
        self.ratios = ratios
        self.epoch = 1
        self.totals = Totals()
        self.util_base = 0.0
        self.osds = 0        # cache OSDs in the IO path

    def pool_set(self, var: str, val: str) -> str:
        return 'no cache tier in the IO path'

    def advance(self, dt: float, d: Demand) -> StepResult:
        return self.step(dt, d)      # nothing here waits on a FULL PG (TierSim.advance)

    def step(self, dt: float, d: Demand) -> StepResult:
        res = StepResult()
        if not d.active:
            self.util_base = 0.0
            return res
        res.offered = True
        sim = self.sc.sim
        bw = sim.base_bandwidth_mib_s * MiB
        bs = float(d.block_size)
        stretch = 1.0 / (1.0 - min(self.util_base, UTILIZATION_CAP))
        lat = sim.base_latency_ms / 1000.0 + bs / bw * stretch
        n = d.threads * dt / lat                       # closed loop (Little's law)
        if d.rate_bytes_s is not None:
            n = min(n, d.rate_bytes_s / bs * dt)
        if n * bs > bw * dt:
            n = bw * dt / bs
            # The threads wait their turn at the base: Little's law again.
            lat = max(lat, d.threads * dt / n)
        self.util_base = n * bs / (bw * dt)
        reads = n * d.read_fraction
        writes = n - reads
        res.ops_done = n
        res.bytes_done = n * bs
        res.write_lat = [(lat, writes)]
        res.read_lat = [(lat, reads)]
        b = self.totals.base
        b['num_read'] += reads
        b['num_read_kb'] += reads * bs / 1024
        b['num_write'] += writes
        b['num_write_kb'] += writes * bs / 1024
        return res

    def pool_levels(self) -> Tuple[float, float]:
        return 0.0, 0.0
