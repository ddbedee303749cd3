"""records.fast_init: the same frozen dataclass, built by a cheaper __init__."""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

import pytest

from tiertune.records import fast_init
from tiertune.sampling import PoolCounters


@fast_init
@dataclass(frozen=True)
class Fast:
    a: int
    b: float = 2.5
    tags: Tuple[str, ...] = field(default_factory=tuple)
    extra: Dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Plain:
    a: int
    b: float = 2.5
    tags: Tuple[str, ...] = field(default_factory=tuple)
    extra: Dict[str, int] = field(default_factory=dict)


def test_same_values_defaults_and_factories_as_the_dataclass_init() -> None:
    cases: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = [
        ((1,), {}), ((1, 3.0), {}), ((), {'a': 4, 'tags': ('x',)}),
        ((5, 1.0, ('y',), {'k': 1}), {})]
    for args, kw in cases:
        fast, plain = Fast(*args, **kw), Plain(*args, **kw)
        assert dataclasses.asdict(fast) == dataclasses.asdict(plain)
        assert repr(fast).replace('Fast', 'Plain') == repr(plain)
    # A factory runs per instance: no dict shared between them.
    assert Fast(1).extra is not Fast(1).extra
    # Given explicitly, even as the falsy value, it is kept.
    empty: Dict[str, int] = {}
    assert Fast(1, extra=empty).extra is empty


def test_still_frozen_hashable_and_replaceable() -> None:
    x = Fast(1, tags=('t',))
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2     # type: ignore[misc]
    assert x == Fast(1, tags=('t',))
    assert {PoolCounters(num_flush=1): 'seen'}[PoolCounters(num_flush=1)] == 'seen'
    assert dataclasses.replace(x, b=7.0) == Fast(1, 7.0, ('t',))
    with pytest.raises(TypeError):
        Fast()      # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast(1, c=3)    # type: ignore[call-arg]


def test_a_module_class_built_by_position_and_by_name() -> None:
    names = [f.name for f in dataclasses.fields(PoolCounters)]
    by_pos = PoolCounters(*range(len(names)))
    assert by_pos == PoolCounters(**{n: i for i, n in enumerate(names)})
    assert [getattr(by_pos, n) for n in names] == list(range(len(names)))
    assert PoolCounters() == PoolCounters(*([0] * len(names)))


def test_refuses_what_it_would_get_wrong() -> None:
    with pytest.raises(AssertionError):
        @fast_init
        @dataclass
        class NotFrozen:
            a: int

    with pytest.raises(AssertionError):
        @fast_init
        @dataclass(frozen=True)
        class PostInit:
            a: int

            def __post_init__(self) -> None:
                pass
