"""A decision's reasons in words: one sentence per ratio worth mentioning
(from the law's _RatioWhy), the note on current ratios that are out of
bounds or misordered, and _Reasons, which words them only when first read.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from .bounds import Bounds, Knobs
from .law import _NO_WHY, ControllerInput, _Law, _RatioWhy
from .stepping import NAMES, RATIO_EPS, _eq_micro, _f, _fmt
from .topology import Ratios

LABELS = {'dirty': 'dirty ratio', 'dirty_high': 'dirty_high ratio', 'full': 'full ratio'}


class _Reasons(Sequence[str]):
    """A decision's reasons, put into words when first read.  Status, eval
    and the audit of an applied change read them; in most ticks nothing
    does, and wording them was a twentieth of a tick's CPU.  Equal to, and
    shown as, the tuple of its sentences (what Decision.reasons was)."""

    def __init__(self, words: Callable[[], List[str]]) -> None:
        self._words: Optional[Callable[[], List[str]]] = words
        self._text: Tuple[str, ...] = ()

    def _sentences(self) -> Tuple[str, ...]:
        if self._words is not None:
            self._text = tuple(self._words())
            self._words = None
        return self._text

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[str, Sequence[str]]:
        return self._sentences()[i]

    def __len__(self) -> int:
        return len(self._sentences())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Reasons):
            other = other._sentences()
        return self._sentences() == other

    def __hash__(self) -> int:
        return hash(self._sentences())

    def __repr__(self) -> str:
        return repr(self._sentences())


def _ratio_sentences(current: Ratios, rec: Ratios, nxt: Ratios, whys: Dict[str, _RatioWhy],
                     held: Optional[str], knobs: Knobs, bounds: Bounds) -> List[str]:
    """One sentence per ratio worth mentioning: safety first, then moves."""
    ranked: List[Tuple[Tuple[bool, bool, int], str]] = []
    for i, (name, (lo, hi)) in enumerate(zip(NAMES, bounds.ranges())):
        w = whys.get(name, _NO_WHY)
        c, r, n = getattr(current, name), getattr(rec, name), getattr(nxt, name)
        moves = not _eq_micro(n, c)
        if not moves and _eq_micro(r, c) and not w.say_if_kept:
            continue    # no sentence (the usual tick): build none of its parts
        label = LABELS[name]
        lead = f'{w.why}: ' if w.why else ''
        purpose = w.purpose
        if not lo - RATIO_EPS <= c <= hi + RATIO_EPS:
            # Out of its range (set by hand): the bounds are the reason.
            lead, purpose = '', f'into its bounds {_f(lo)}..{_f(hi)}'
        elif not w.why:
            purpose = 'to keep dirty <= dirty_high <= full'
        if moves:
            verb = 'lowering' if n < c else 'raising'
            target = f'{w.bound} {_f(r)}' if w.bound else _f(r)
            to = f' toward {target}' if not _eq_micro(n, r) else ''
            s = f'{lead}{verb} {label} {_f(c)} -> {_f(n)}{to} {purpose}'
        elif not _eq_micro(r, c):
            why_not = held or (f'within the {_f(knobs.deadband)} deadband'
                               if abs(r - c) < knobs.deadband else 'held')
            s = f'{lead}{label} would go {_f(c)} -> {_f(r)} {purpose}; not now: {why_not}'
        else:   # w.say_if_kept
            s = f'{lead}{label} stays at {_f(c)}'
        ranked.append(((not w.safety, not moves, i), ' '.join(s.split())))
    return [s for _, s in sorted(ranked)]


def _invalid_note(invalid: List[str], current: Ratios, recommended: Ratios,
                  verb: str) -> List[str]:
    # Module level, not a closure in decide: a nested def evaluates its
    # typing annotations on every call.
    if not invalid:
        return []
    return [f'current ratios {_fmt(current)} are outside the bounds or misordered '
            f'({"; ".join(invalid)}): {verb} them toward {_fmt(recommended)}']


def _reasons(head: List[str], current: Ratios, recommended: Ratios, shown: Ratios,
             law: Optional[_Law], held: Optional[str], inp: ControllerInput,
             where_if_nothing: bool = False) -> List[str]:
    """A decision's reasons (worded when first read, see _Reasons): head,
    then a sentence per ratio worth mentioning (shown: the ratios the
    decision sets; held: why it does not move them), then the law's notes;
    with where_if_nothing, that the ratios are where the law wants them
    when there is nothing else to say."""
    out = list(head)
    if law is not None:
        out += _ratio_sentences(current, recommended, shown, law.whys, held, inp.knobs,
                                inp.bounds)
        out += law.notes
    if where_if_nothing and not out:
        out = [f'ratios {_fmt(current)} are where the law wants them']
    return out
