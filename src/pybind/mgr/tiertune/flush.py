"""The flush estimate: achieved flush bytes/s against the PGs in flush
LOW and HIGH mode (least squares, coefficients >= 0)."""

from dataclasses import dataclass
from typing import List, Optional, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .series import MIB, _count, _nnz, _r2, _Series

# --- flush -----------------------------------------------------------------
# Two coefficients and at least three degrees of freedom left for r2.
FLUSH_MIN_POINTS = 5
# The agent's flush quota is osd_agent_max_ops (4) in-flight ops per OSD when
# a PG there is HIGH, osd_agent_max_low_ops (2) otherwise: a HIGH PG should
# flush about twice as fast as a LOW one.  Only noted, never imposed.
FLUSH_PRIOR_HIGH_OVER_LOW = 2.0


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class FlushModel:
    """Achieved flush bytes/s as a function of the PGs in flush low/high:
    flush ~= per_pg_low * n_low + per_pg_high * n_high, least squares."""
    per_pg_low_bps: Optional[float]
    per_pg_high_bps: Optional[float]
    r2: Optional[float]
    points: int

    def capacity_bps(self, n_low: int, n_high: int) -> Optional[float]:
        low, high = self.per_pg_low_bps, self.per_pg_high_bps
        if low is None and high is None:
            return None
        # One mode never seen: assume the other's rate.  For HIGH from LOW
        # that underestimates (the prior is ~2x), the safe side for a
        # controller that must not count on flushing it cannot see.
        low = high if low is None else low
        high = low if high is None else high
        assert low is not None and high is not None
        return low * n_low + high * n_high


def _single_coefficient(x: np.ndarray, y: np.ndarray) -> float:
    """Least squares y ~= c * x through the origin, c >= 0."""
    return max(float(x.dot(y) / x.dot(x)), 0.0)


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class _FlushPoints:
    """The intervals with a PG in a flush mode: PGs in LOW and HIGH, flush
    bytes/s, and the normal equations of flush ~= low * n_low + high * n_high.
    PG counts are integers, so the Gram entries are exact (every product and
    partial sum is an integer below 2**53 for any pg_num and history_size
    the options allow) and det == 0 is exactly "rank below 2"."""
    n_low: np.ndarray
    n_high: np.ndarray
    y: np.ndarray
    g_ll: int        # n_low . n_low
    g_lh: int
    g_hh: int
    det: int         # g_ll * g_hh - g_lh ** 2 (Python ints: no overflow)

    @classmethod
    def of(cls, n_low: np.ndarray, n_high: np.ndarray, y: np.ndarray) -> '_FlushPoints':
        g_ll, g_lh, g_hh = (int(n_low.dot(n_low)), int(n_low.dot(n_high)),
                            int(n_high.dot(n_high)))
        return cls(n_low, n_high, y, g_ll, g_lh, g_hh, g_ll * g_hh - g_lh * g_lh)

    def sse(self, low: float, high: float) -> float:
        r = low * self.n_low + high * self.n_high - self.y
        return float(r.dot(r))


def _nonnegative_pair(p: _FlushPoints, notes: List[str]) -> Tuple[float, float]:
    """Two-column least squares (full rank) with both coefficients >= 0: the
    free fit if it is, else the better of the one-column fits with the other
    clipped to 0 (refitting the kept one, which the clipped one was
    compensating).  The free fit solves the 2x2 normal equations directly:
    np.linalg.lstsq (an SVD) gave the same to rounding at many times the cost."""
    b_l, b_h = float(p.n_low.dot(p.y)), float(p.n_high.dot(p.y))
    coef = ((p.g_hh * b_l - p.g_lh * b_h) / p.det, (p.g_ll * b_h - p.g_lh * b_l) / p.det)
    if coef[0] >= 0 and coef[1] >= 0:
        return coef
    notes.append(f'flush: the free fit gave LOW {coef[0] / MIB:.2f} and HIGH '
                 f'{coef[1] / MIB:.2f} MiB/s per PG; the negative one is set to 0')
    low = (_single_coefficient(p.n_low, p.y), 0.0)
    high = (0.0, _single_coefficient(p.n_high, p.y))
    return low if p.sse(*low) <= p.sse(*high) else high


def _flush(s: _Series, notes: List[str]) -> FlushModel:
    used = s.flushing
    points = int(_nnz(used))
    if points < FLUSH_MIN_POINTS:
        notes.append(f'flush: {_count(points, "interval")} with a PG in a flush mode, '
                     f'need {FLUSH_MIN_POINTS}')
        return FlushModel(None, None, None, points)
    p = _FlushPoints.of(s.n_low[used], s.n_high[used], s.flush[used])
    low: Optional[float]
    high: Optional[float]
    if p.det != 0:
        low, high = _nonnegative_pair(p, notes)
        if low > 0 and not (FLUSH_PRIOR_HIGH_OVER_LOW / 2 <= high / low
                            <= FLUSH_PRIOR_HIGH_OVER_LOW * 2):
            notes.append(f'flush: HIGH flushes {high / low:.1f}x LOW per PG; the agent\'s '
                         f'4 vs 2 in-flight ops per OSD suggest about '
                         f'{FLUSH_PRIOR_HIGH_OVER_LOW:.0f}x')
    elif p.g_hh == 0:
        low, high = _single_coefficient(p.n_low, p.y), None
        notes.append('flush: only LOW mode seen; one per-PG coefficient, HIGH assumed equal '
                     '(the agent allows it about twice the in-flight ops)')
    elif p.g_ll == 0:
        low, high = None, _single_coefficient(p.n_high, p.y)
        notes.append('flush: only HIGH mode seen; one per-PG coefficient, LOW assumed equal '
                     '(the agent allows it about half the in-flight ops)')
    else:
        low = high = _single_coefficient(p.n_low + p.n_high, p.y)
        notes.append('flush: LOW and HIGH PG counts moved together; one coefficient for both')
    fitted = (low or 0.0) * p.n_low + (high or 0.0) * p.n_high
    return FlushModel(low, high, _r2(p.y, fitted), points)
