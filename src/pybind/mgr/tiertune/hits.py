"""The hit estimate: the share of client ops the cache served itself, and
its line against cache occupancy (fill)."""

from dataclasses import dataclass
from typing import Optional, Tuple

# The lint venv has no numpy; Debian's python3-numpy (with its stubs) is the
# runtime one.  unused-ignore keeps this line clean wherever numpy is found.
import numpy as np  # type: ignore[import-not-found, unused-ignore]

from .series import _any, _count, _mean, _nnz, _r2, _Series

# --- hits -------------------------------------------------------------------
# (HIT_MIN_OPS_SEC, what counts as client IO at all, is with the series' masks.)
# Points for a straight line whose slope means something.
HIT_MIN_POINTS = 10
# Fill must vary this much (5% of target) before a slope against it is more
# than the noise in the share.
HIT_MIN_FILL_SPAN = 0.05


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class HitModel:
    """Share of client ops the cache served itself (not proxied), against
    cache occupancy (fill): hit ~= a + b * fill.  too_thin says why no curve
    was fitted (too few points, or fill did not vary enough)."""
    hit_ratio: Optional[float]       # recent smoothed share
    intercept: Optional[float]
    slope: Optional[float]
    r2: Optional[float]
    points: int
    too_thin: Optional[str]


def _absorbed(served: np.ndarray, proxied: np.ndarray, dt: np.ndarray) -> Optional[float]:
    """Share served over a window, from sums (single intervals' proxied
    figures can be negative; the sums are exact)."""
    sv = float(served.dot(dt))
    px = max(float(proxied.dot(dt)), 0.0)
    return sv / (sv + px) if sv + px > 0 else None


def _hits(s: _Series) -> HitModel:
    if not len(s):
        return HitModel(None, None, None, None, 0, 'no samples with rates yet')
    total = s.total_ops
    known = s.px_known
    window = s.window(known)
    hit_ratio = None
    if _any(s.active[window]):
        hit_ratio = _absorbed(s.served_ops[window], s.px_ops[window], s.dt[window])
    has_fill = s.has_fill
    used = s.hit_points
    points = int(_nnz(used))
    too_thin: Optional[str] = None
    if not _any(has_fill):
        too_thin = 'no target_max_bytes/objects: fill is unknown'
    elif not _any(known):
        too_thin = 'no base pool counters: proxied IO is unknown'
    elif points < HIT_MIN_POINTS:
        too_thin = f'{_count(points, "point")}, need {HIT_MIN_POINTS}'
    else:
        fill = s.fill[used]
        # fill.max() - fill.min(), without their Python wrappers.
        span = float(np.maximum.reduce(fill) - np.minimum.reduce(fill))
        if span < HIT_MIN_FILL_SPAN:
            too_thin = f'fill varied only {span:.3f}, need {HIT_MIN_FILL_SPAN}'
    if too_thin is not None:
        return HitModel(hit_ratio, None, None, None, points, too_thin)
    share = s.served_ops[used] / total[used]
    slope, intercept = _line(fill, share)
    r2 = _r2(share, intercept + slope * fill)
    return HitModel(hit_ratio, intercept, slope, r2, points, None)


def _line(x: np.ndarray, y: np.ndarray) -> Tuple[float, float]:
    """Least squares y ~= intercept + slope * x: (slope, intercept), as
    np.polyfit(x, y, 1) gives them (to rounding) in a tenth of its time.
    Centred sums keep it exact enough; x varies (the caller checks)."""
    xm, ym = _mean(x), _mean(y)
    dx = x - xm
    slope = float(dx.dot(y - ym) / dx.dot(dx))
    return slope, ym - slope * xm
