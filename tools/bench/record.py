"""One benchmark run as a JSON record, the same for the simulator and the
real cluster:

    {"scenario": "bursty-write-fits", "policy": "tiertune", "backend": "sim",
     "metrics": {<METRIC_KEYS>},
     "series": {"t": [...], "throughput_mib_s": [...], "write_lat_ms_p99": [...],
                "dirty": [...], "fill": [...]},
     "ratio_changes": [{"t": 12.0, "dirty": 0.3, "dirty_high": 0.6, "full": 0.8}, ...],
     "how": "how the figures were measured", "params": {...}}

series are per interval of the run (one row per `t`, seconds from the
start); dirty and fill are fractions of target_max_bytes as the OSD agent
computes them.  ratio_changes starts with the ratios at t=0.
"""

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

METRIC_KEYS = (
    'throughput_mib_s_mean',    # client bytes moved (reads + writes) over the run / its length
    'throughput_mib_s_min',     # lowest per-interval throughput while clients were active
    'throughput_mib_s_stddev',  # of the per-interval throughput while clients were active
    'write_lat_ms_p50', 'write_lat_ms_p99', 'write_lat_ms_p999', 'write_lat_ms_max',
    'read_lat_ms_p99',
    'blocked_write_s',          # seconds some client write waited on a full cache
    'flushed_bytes',            # bytes the agent wrote to the base
    'promotes',                 # objects promoted into the cache
    'hit_ratio',                # client ops served by the cache / all client ops
    'ratio_changes',            # `osd pool set` batches applied during the run
)
# Metrics a record may lack (records made before they were added).
OPTIONAL_METRIC_KEYS = (
    # p99 of the writes completed after the scenario's first repeat (None:
    # one repeat, or no such writes).  An online policy starts a run where the
    # cluster stands (Ceph's defaults) and learns the workload in its first
    # repeat; a static setting has its ratios from the first second.  The
    # whole run's p99 holds both; this one holds what follows the learning.
    'write_lat_ms_p99_after_first',
)
SERIES_KEYS = ('t', 'throughput_mib_s', 'write_lat_ms_p99', 'dirty', 'fill')


def weighted_percentile(values: Sequence[float], weights: Sequence[float],
                        q: float) -> Optional[float]:
    """The q-quantile (0..1) of values each seen weights times (op counts):
    the smallest value with at least q of the weight at or below it.  None
    when there is no weight."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    if not keep.any():
        return None
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind='stable')
    v, w = v[order], w[order]
    cum = np.cumsum(w)
    idx = int(np.searchsorted(cum, q * cum[-1], side='left'))
    return float(v[min(idx, v.size - 1)])


def throughput_stats(throughput_mib_s: Union[Sequence[float], np.ndarray],
                     active: Union[Sequence[bool], np.ndarray],
                     total_mib: float, duration_s: float) -> Dict[str, Optional[float]]:
    """Mean over the whole run (idle time included: the same for every
    policy on a scenario); min and stddev over the intervals with client IO
    offered, where a stall shows."""
    x = np.asarray(throughput_mib_s, dtype=float)
    a = np.asarray(active, dtype=bool)
    busy = x[a] if a.any() else x
    return {
        'throughput_mib_s_mean': total_mib / duration_s if duration_s > 0 else None,
        'throughput_mib_s_min': float(busy.min()) if busy.size else None,
        'throughput_mib_s_stddev': float(busy.std()) if busy.size else None,
    }


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (np.floating, np.integer)):
        return _clean(v.item())
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_clean(x) for x in v]
    return v


@dataclass
class RunRecord:
    scenario: str
    policy: str
    backend: str                        # 'sim' | 'cluster'
    metrics: Dict[str, Any]
    series: Dict[str, List[Any]] = field(default_factory=dict)
    ratio_changes: List[Dict[str, float]] = field(default_factory=list)
    how: str = ''
    params: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [k for k in METRIC_KEYS if k not in self.metrics]
        if missing:
            raise ValueError(f'run record lacks metrics: {", ".join(missing)}')

    def as_dict(self) -> Dict[str, Any]:
        return _clean(asdict(self))

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=1, allow_nan=False) + '\n')

    @classmethod
    def read(cls, path: Path) -> 'RunRecord':
        d = json.loads(Path(path).read_text())
        return cls(**d)
