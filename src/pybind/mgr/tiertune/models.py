"""Fitted per-pool estimates of promote, flush and evict pressure.

Pure: a pool's sample history in, a PoolModel out.  numpy only (scipy's
optimize/stats/interpolate/signal hang ceph-mgr's sub-interpreters).  Called
once per tick per cache pool, so it must stay cheap: O(history) with small
constants, no per-PG work.

The estimates live one to a module, each with its constants and its output
type: series (the history as arrays, and the numpy helpers), inflow, flush,
evict, hits, promote (the promote gate) and predictions.  This module puts
them together (fit, fit_pools) into a PoolModel, and re-exports (the
`import x as x` lines) the names the rest of the module, the tests and the
bench tools import from here.
"""

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .evict import EvictModel, _evict
from .evict import byte_budget as byte_budget
from .flush import FLUSH_MIN_POINTS as FLUSH_MIN_POINTS
from .flush import FLUSH_PRIOR_HIGH_OVER_LOW as FLUSH_PRIOR_HIGH_OVER_LOW
from .flush import FlushModel, _flush
from .hits import HIT_MIN_FILL_SPAN as HIT_MIN_FILL_SPAN
from .hits import HIT_MIN_POINTS as HIT_MIN_POINTS
from .hits import HitModel, _hits
from .inflow import BURST_FACTOR as BURST_FACTOR
from .inflow import IDLE_AFTER_S as IDLE_AFTER_S
from .inflow import IDLE_FRACTION_OF_LONG as IDLE_FRACTION_OF_LONG
from .inflow import InflowModel, _inflow
from .inflow import idle_threshold_bps as idle_threshold_bps
from .predictions import BAND_SIGMAS as BAND_SIGMAS
from .predictions import Band as Band
from .predictions import Predictions, _predictions
from .promote import DEFAULT_LIMITS, PromoteGate, PromoteLimits, _promote
from .promote import GATE_MIN_ACTIVE as GATE_MIN_ACTIVE
from .promote import MEANINGFUL_PROXIED_SHARE as MEANINGFUL_PROXIED_SHARE
from .promote import PROMOTE_BYTES_STEP as PROMOTE_BYTES_STEP
from .promote import THROTTLE_FRACTION as THROTTLE_FRACTION
from .rates import HistoryEntry
from .sampling import AgentLevels, agent_levels
from .series import _SERIES_FIELDS as _SERIES_FIELDS
from .series import _SERIES_MASKS as _SERIES_MASKS
from .series import HIT_MIN_OPS_SEC as HIT_MIN_OPS_SEC
from .series import IDLE_FLOOR_BPS as IDLE_FLOOR_BPS
from .series import LONG_HORIZON_S as LONG_HORIZON_S
from .series import MIB as MIB
from .series import RECENT_WINDOW_S as RECENT_WINDOW_S
from .series import SHORT_HORIZON_S, SeriesCache, _count, _Series, _series
from .series import _mean as _mean
from .series import _sum_squares as _sum_squares
from .topology import CacheTier

# --- fitted or not ---------------------------------------------------------
# Fewer intervals than this and one skewed stats report dominates.
FIT_MIN_SAMPLES = 5
# At least one short horizon, so the short average is not just the history.
FIT_MIN_WINDOW_S = SHORT_HORIZON_S

# --- as_dict ---------------------------------------------------------------
# Figures at or above this are byte counts or rates: whole units are enough.
ROUND_WHOLE_ABOVE = 1000.0
# Below it (ratios, r2, per-second op rates) four decimals.
ROUND_DIGITS = 4


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class PoolModel:
    fitted: bool
    why_not: Optional[str]           # set when not fitted
    samples: int                     # history entries with rates
    window_s: float                  # time the history spans
    inflow: InflowModel
    flush: FlushModel
    evict: EvictModel
    hits: HitModel
    promote: PromoteGate
    predictions: Predictions
    notes: Sequence[str] = field(default_factory=tuple)

    def as_dict(self) -> Dict[str, Any]:
        out = _jsonable(dataclasses.asdict(self))
        assert isinstance(out, dict)
        if not self.fitted:
            # What no one acts on, and what misleads most: after a failover
            # the pool as it was before, "predicted full in 25 s" on an
            # idle cache (a review helper).
            out['predictions'] = None
        return out


def _round(x: float) -> Optional[float]:
    if not math.isfinite(x):
        return None     # JSON has no inf/nan: an unbounded band edge is null
    if abs(x) >= ROUND_WHOLE_ABOVE:
        return float(round(x))
    return round(x, ROUND_DIGITS)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return _round(float(v))
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


# --- the model --------------------------------------------------------------

def _why_not(tier: CacheTier, samples: int, window_s: float,
             not_current: Optional[str]) -> Optional[str]:
    reasons = []
    if not tier.has_target:
        reasons.append('no target_max_bytes/objects: the agent never flushes or evicts')
    if samples < FIT_MIN_SAMPLES:
        reasons.append(f'{_count(samples, "sample")} with rates, need {FIT_MIN_SAMPLES}')
    if window_s < FIT_MIN_WINDOW_S:
        reasons.append(f'history spans {window_s:.0f} s, need {FIT_MIN_WINDOW_S:.0f} s')
    if not_current is not None:
        # The estimates would describe the pool as it was at the newest
        # measured interval, as if now (see PoolHistory.not_current): a
        # tick's wait for a measured one.
        reasons.append(not_current)
    return '; '.join(reasons) if reasons else None


def fit(history: Sequence[HistoryEntry], tier: CacheTier,
        limits: PromoteLimits = DEFAULT_LIMITS,
        cache: Optional[SeriesCache] = None, not_current: Optional[str] = None
        ) -> PoolModel:
    """The pool's model from its history (oldest first).  Never raises on a
    short or empty history: what cannot be estimated is None, and fitted
    says whether the whole is worth acting on.  With a cache (one per pool,
    given the same pool's history every call) the arrays are kept across
    calls instead of rebuilt; the model is the same (on a CPU with
    AVX-512, numpy's sums over the kept arrays can differ from a rebuild's
    in the last bit or two: FLOAT_REL_TOL in tests/conftest.py).
    not_current: see FitJob."""
    return fit_pools([FitJob(history, tier, limits, cache, not_current)])[0]


class FitJob(NamedTuple):
    """One pool's fit() arguments, for fit_pools."""
    history: Sequence[HistoryEntry]
    tier: CacheTier
    limits: PromoteLimits = DEFAULT_LIMITS
    cache: Optional[SeriesCache] = None
    # Why the newest measured interval is not the pool's now (rates.
    # PoolHistory.not_current): the model is then not fitted.
    not_current: Optional[str] = None


def fit_pools(jobs: Sequence[FitJob]) -> List[PoolModel]:
    """fit() for several pools: one estimate at a time for all of them,
    rather than one pool at a time, so that each estimate's code (ours and
    numpy's) runs for every pool while the CPU still holds it in its caches
    (at 64 cache pools a tick took about a tenth less CPU).  Each model is
    exactly what fit() gives that pool alone: no estimate of one pool reads
    another's, and a pool's SeriesCache views stay valid until its next fit."""
    return [dataclasses.replace(model, promote=gate())
            for model, gate in fit_pools_deferred(jobs)]


# The promote gate in a model from fit_pools_deferred: computed later, on
# demand (DeferredGate).
PROMOTE_PENDING = PromoteGate(None, None, 0.0, 0.0, 'pending', 'not computed yet', {})


class DeferredGate:
    """A pool's promote gate, computed when asked for.  The controller and
    the health checks never read the gate; status and eval do, on an
    operator's command rather than every tick, and it was a tenth of a
    tick's CPU.  It gives what fit() gives, whenever asked: it holds the
    fit's arrays, whose rows the pool's later SeriesCache updates leave
    as they are but for growth, which the gate does not read (see
    SeriesCache)."""

    def __init__(self, s: _Series, tier: CacheTier, limits: PromoteLimits,
                 levels: Optional[AgentLevels]) -> None:
        self._s, self._tier, self._limits, self._levels = s, tier, limits, levels

    def __call__(self) -> PromoteGate:
        try:
            return _promote(self._s, self._tier, self._limits, self._levels)
        except Exception as e:
            # Only status and eval show the gate (the law never reads it):
            # an error in it must not fail them for every pool.
            return dataclasses.replace(PROMOTE_PENDING, limiter='unknown',
                                       detail=f'not computed: {type(e).__name__}: {e}')


def fit_pools_deferred(jobs: Sequence[FitJob]) -> List[Tuple[PoolModel, DeferredGate]]:
    """fit_pools, each model with PROMOTE_PENDING for its promote gate and
    the gate to compute when it is wanted (see DeferredGate)."""
    return [(f.model(), DeferredGate(f.s, f.job.tier, f.job.limits, f.levels))
            for f in _fit_steps(jobs)]


def _fit_steps(jobs: Sequence[FitJob]) -> List['_PoolFit']:
    """fit_pools' steps, all but the promote gate."""
    for job in jobs:    # every pool's new rows, then every pool's arrays
        if job.cache is not None:
            job.cache.update(job.history, job.tier)
    fits = [_PoolFit(job) for job in jobs]
    for f in fits:
        f.inflow = _inflow(f.s, f.job.tier, f.levels)
    for f in fits:
        f.flush = _flush(f.s, f.notes)
    for f in fits:
        f.evict = _evict(f.s, f.job.tier, f.levels)
    for f in fits:
        f.hits = _hits(f.s)
    for f in fits:
        f.predictions = _predictions(f.s, f.job.history, f.job.tier, f.levels, f.inflow,
                                     f.flush)
    return fits


class _PoolFit:
    """One pool's fit in progress (fit_pools): its arrays, then each
    estimate as its step runs for every pool."""
    inflow: InflowModel
    flush: FlushModel
    evict: EvictModel
    hits: HitModel
    predictions: Predictions

    def __init__(self, job: FitJob) -> None:
        self.job = job
        history, tier = job.history, job.tier
        self.s: _Series
        self.levels: Optional[AgentLevels]
        if job.cache is not None:     # updated to this history by fit_pools
            self.s = job.cache.view()
            self.levels = job.cache.levels if history else None
        else:
            self.s = _series(history, tier)
            self.levels = agent_levels(tier, history[-1].sample.counters) if history else None
        self.notes: List[str] = []

    def model(self) -> PoolModel:
        """The pool's model, its promote gate PROMOTE_PENDING."""
        history, s = self.job.history, self.s
        window_s = float(history[-1].sample.mono - history[0].sample.mono) if history else 0.0
        why_not = _why_not(self.job.tier, len(s), window_s, self.job.not_current)
        return PoolModel(
            fitted=why_not is None, why_not=why_not, samples=len(s), window_s=window_s,
            inflow=self.inflow, flush=self.flush, evict=self.evict, hits=self.hits,
            promote=PROMOTE_PENDING, predictions=self.predictions, notes=tuple(self.notes))
