"""Frozen dataclasses for the values a tick makes by the thousand.

A frozen dataclass's __init__ sets each field through object.__setattr__
(its own __setattr__ refuses), a call per field: the tick with 64 cache
pools sets some 9,000 fields of frozen values (counters, rates, the
models' estimates, the controller's input and decision), and those calls
were about a twentieth of it.  fast_init gives such a class an __init__
that fills the instance's dict in one update instead: the same object,
as frozen as before (assignment still raises), with the same signature
and defaults.
"""

import dataclasses
from typing import Any, Dict, List, Type, TypeVar

_T = TypeVar('_T')


class _Missing:
    """The default of a field with a default_factory (the factory runs
    when the caller gives none)."""


_MISSING = _Missing()


def fast_init(cls: Type[_T]) -> Type[_T]:
    """Apply above @dataclass(frozen=True).  Every field must be an init
    field, and the class must have no __post_init__ (this __init__ would
    skip it)."""
    params = dataclasses.fields(cls)   # type: ignore[arg-type]
    assert vars(cls)['__dataclass_params__'].frozen, cls
    assert all(f.init for f in params), cls
    assert not hasattr(cls, '__post_init__'), cls
    ns: Dict[str, Any] = {'_MISSING': _MISSING}
    args: List[str] = []
    factories: List[str] = []
    for f in params:
        if f.default is not dataclasses.MISSING:
            ns[f'_default_{f.name}'] = f.default
            args.append(f'{f.name}=_default_{f.name}')
        elif f.default_factory is not dataclasses.MISSING:
            ns[f'_factory_{f.name}'] = f.default_factory
            args.append(f'{f.name}=_MISSING')
            factories.append(f'    if {f.name} is _MISSING:\n'
                             f'        {f.name} = _factory_{f.name}()\n')
        else:
            args.append(f.name)
    fill = ', '.join(f'{f.name}={f.name}' for f in params)
    src = (f'def __init__(self, {", ".join(args)}):\n' + ''.join(factories)
           + f'    self.__dict__.update({fill})\n')
    exec(src, ns)   # as dataclasses builds the __init__ it replaces
    init = ns['__init__']
    init.__qualname__ = f'{cls.__qualname__}.__init__'
    init.__module__ = cls.__module__
    cls.__init__ = init    # type: ignore[method-assign]
    return cls
