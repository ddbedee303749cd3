from typing import Any, Type

Module: Type[Any]
try:
    # The models' one dependency, which a mgr process loads into one
    # module's interpreter only (see without_numpy.py).
    import numpy  # noqa: F401
except ImportError as e:
    from .without_numpy import module_without_numpy
    Module = module_without_numpy(str(e))
else:
    from .module import Module

__all__ = ['Module']
