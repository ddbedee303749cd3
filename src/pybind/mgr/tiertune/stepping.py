"""The ratios as the mon stores them, and the bounded step toward the law's.

Rounding to millionths (the mon's precision) and comparing at it; ordering
a point within the bounds (dirty <= dirty_high <= full, dirty's value
first); what is wrong with ratios out of bounds or misordered; and step,
which moves each ratio at most max_step toward recommended, skipping moves
under the deadband.  Pure arithmetic on Ratios, Bounds and Knobs: the law
(law.py) and decide (controller.py) build on it.
"""

from typing import List, Tuple

from .bounds import Bounds, Knobs
from .topology import MICRO, Ratios

# The mon stores ratios as llrintl(f * 1e6): values closer than half a
# millionth are the same ratio.
RATIO_EPS = 0.5 / MICRO

NAMES = ('dirty', 'dirty_high', 'full')

Triple = Tuple[float, float, float]
Ranges = Tuple[Tuple[float, float], Tuple[float, float], Tuple[float, float]]


def _clamp(x: float, lo: float, hi: float) -> float:
    """min(max(x, lo), hi), without the builtins' calls (about half a
    clamp's cost, ten clamps a pool a tick).  The same comparisons: max
    keeps its first argument unless the second is greater, min unless the
    second is smaller, so NaNs and signed zeros come out as from the builtins."""
    m = lo if lo > x else x
    return hi if hi < m else m


def _micro(x: float) -> int:
    return int(round(x * MICRO))


def to_mon_grid(t: Triple) -> Ratios:
    """The ratios as the mon stores them (millionths)."""
    # Rounding is monotone, so an ordered triple stays ordered.  Unrolled,
    # _micro written out: several times per pool per tick.
    return Ratios(int(round(t[0] * MICRO)) / MICRO, int(round(t[1] * MICRO)) / MICRO,
                  int(round(t[2] * MICRO)) / MICRO)


def _triple(r: Ratios) -> Triple:
    return (float(r.dirty), float(r.dirty_high), float(r.full))


def _eq_micro(x: float, y: float) -> bool:
    """Equal as the mon stores them (millionths).  Equal floats are, without
    rounding either: the usual case, a ratio that does not move."""
    return x == y or _micro(x) == _micro(y)


def same(a: Ratios, b: Ratios) -> bool:
    """Equal as the mon stores them (millionths)."""
    # Unrolled: called several times per pool per tick.
    return (_eq_micro(a.dirty, b.dirty) and _eq_micro(a.dirty_high, b.dirty_high)
            and _eq_micro(a.full, b.full))


def _f(x: float) -> str:
    """A ratio for a sentence: two decimals, a third only when needed (the
    exact values are in Decision.numbers and the ratios themselves)."""
    s = f'{x:.3f}'
    if s[-4:-3] == '.':     # finite: three decimals; the third only when not 0
        return s[:-1] if s[-1] == '0' else s
    whole, _, frac = s.rstrip('0').partition('.')   # inf, nan
    return f'{whole}.{frac.ljust(2, "0")}'


def _fmt(r: Ratios) -> str:
    return f'{_f(r.dirty)}/{_f(r.dirty_high)}/{_f(r.full)}'


def order_within(t: Triple, ranges: Ranges) -> Triple:
    """The point t brought inside ranges and ordered (dirty <= dirty_high <=
    full), dirty's value taking priority: clamp dirty; dirty_high and full
    make room above it (each clamped); then, only if a max forces it, pull
    dirty_high down to full and dirty down to dirty_high.

    Lands inside ranges and ordered whenever the ranges admit an ordered
    point, i.e. lo_i <= hi_i and lo_i <= hi_j for i < j (Bounds.problem() is
    None says exactly that):
      * f < h after the second clamp only if f was cut to hi_f; h = hi_f is
        >= lo_h (feasible) and < the old h <= hi_h.
      * d > h then only if h was cut to hi_h or set to hi_f, both >= lo_d;
        d = h is below the old d <= hi_d.
    """
    (dlo, dhi), (hlo, hhi), (flo, fhi) = ranges
    d = _clamp(t[0], dlo, dhi)
    h = _clamp(max(t[1], d), hlo, hhi)
    f = _clamp(max(t[2], h), flo, fhi)
    if h > f:
        h = f
    if d > h:
        d = h
    return (d, h, f)


def _valid(r: Ratios, bounds: Bounds) -> bool:
    """Within the bounds and ordered (to RATIO_EPS), in one expression: the
    usual case, where out_of_bounds and _exempt find nothing (a NaN fails
    it, and they judge it themselves)."""
    (dlo, dhi), (hlo, hhi), (flo, fhi) = bounds.ranges()
    d, h, f = r.dirty, r.dirty_high, r.full
    return (dlo - RATIO_EPS <= d <= dhi + RATIO_EPS and hlo - RATIO_EPS <= h <= hhi + RATIO_EPS
            and flo - RATIO_EPS <= f <= fhi + RATIO_EPS
            and d <= h + RATIO_EPS and h <= f + RATIO_EPS)


def out_of_bounds(r: Ratios, bounds: Bounds) -> List[str]:
    """What is wrong with r against bounds and the ordering (empty: valid)."""
    if _valid(r, bounds):
        return []
    problems = []
    for name, v, (lo, hi) in zip(NAMES, _triple(r), bounds.ranges()):
        if v < lo - RATIO_EPS:
            problems.append(f'{name} {_f(v)} below min {_f(lo)}')
        elif v > hi + RATIO_EPS:
            problems.append(f'{name} {_f(v)} above max {_f(hi)}')
    if r.dirty > r.dirty_high + RATIO_EPS:
        problems.append(f'dirty {_f(r.dirty)} above dirty_high {_f(r.dirty_high)}')
    if r.dirty_high > r.full + RATIO_EPS:
        problems.append(f'dirty_high {_f(r.dirty_high)} above full {_f(r.full)}')
    return problems


def nearest_valid(r: Ratios, bounds: Bounds) -> Ratios:
    """Where out-of-bounds or misordered ratios go (order_within's rule);
    a valid r is its own answer."""
    return to_mon_grid(order_within(_triple(r), bounds.ranges()))


def _exempt(r: Ratios, bounds: Bounds) -> Tuple[bool, bool, bool]:
    """Which ratios are themselves out of range or in a misordered pair: they
    move even when the move is under the deadband."""
    if _valid(r, bounds):
        return (False, False, False)
    c = _triple(r)
    out = [not lo - RATIO_EPS <= v <= hi + RATIO_EPS
           for v, (lo, hi) in zip(c, bounds.ranges())]
    if c[0] > c[1] + RATIO_EPS:
        out[0] = out[1] = True
    if c[1] > c[2] + RATIO_EPS:
        out[1] = out[2] = True
    return (out[0], out[1], out[2])


def step(current: Ratios, recommended: Ratios, knobs: Knobs,
         exempt: Tuple[bool, bool, bool] = (False, False, False)) -> Ratios:
    """One bounded step from current toward recommended (which is ordered).

    Each ratio moves by min(|delta|, max_step) (t_i); a move under the
    deadband is skipped unless exempt.  Skipping can misorder the point
    (dirty moves up past a dirty_high that stayed), so a skipped ratio is
    then pushed along by the moved ones: x_j = clamp(c_j, max of the moved
    t_i below it, min of the moved t_k above it).  For an ordered current:
      * the moved t are ordered among themselves: t_i = median(c_i - step,
        r_i, c_i + step) is monotone in c_i and r_i;
      * a skipped ratio has |r_j - c_j| < deadband <= max_step, so t_j = r_j,
        and a push takes it to some t_i between c_j and r_j (c_i <= c_j and
        t_i <= t_j for i < j, mirrored above);
    so the result is ordered, every ratio lies between its current and
    recommended value (inside the bounds when both are), no ratio moves by
    more than max_step, and every ratio whose move is at least the deadband
    (or that is exempt) makes its full step: repeated steps reach
    recommended.  A misordered current can give an unordered point; a last
    order_within pass, each ratio confined between its current and
    recommended value (ranges that admit an ordered point: recommended),
    orders it, and then a ratio may move further than max_step: the one
    exception.  For an ordered current that pass changes nothing.
    """
    c, r = _triple(current), _triple(recommended)
    if c == r and c[0] <= c[1] <= c[2]:
        # Nothing to move (the usual tick): every delta is 0, so each t_i is
        # c_i, no push changes an ordered point, and the last pass keeps it.
        return to_mon_grid(c)
    t: List[float] = []
    moving: List[bool] = []
    under, most = knobs.deadband - RATIO_EPS, knobs.max_step
    for ci, ri, ex in zip(c, r, exempt):
        delta = ri - ci
        skip = abs(delta) < under and not ex
        t.append(ci if skip else ci + _clamp(delta, -most, most))
        moving.append(not skip)
    x = list(t)     # a skipped ratio's t is its current value
    # A push needs a skipped ratio and a moved one; most steps move all
    # three or none, and then the loops below change nothing.
    for j in (range(3) if any(moving) and not all(moving) else ()):
        if not moving[j]:
            # max(c_j, moved t below), then min(that, moved t above), as
            # the builtins compare: one item at a time.
            for i in range(j):
                if moving[i] and t[i] > x[j]:
                    x[j] = t[i]
            for k in range(j + 1, 3):
                if moving[k] and t[k] < x[j]:
                    x[j] = t[k]
    between: Ranges = ((min(c[0], r[0]), max(c[0], r[0])),
                       (min(c[1], r[1]), max(c[1], r[1])),
                       (min(c[2], r[2]), max(c[2], r[2])))
    return to_mon_grid(order_within((x[0], x[1], x[2]), between))
