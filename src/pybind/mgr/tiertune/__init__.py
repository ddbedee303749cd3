import sys
from typing import Any, Type

from .cannot_run import module_that_cannot_run, python_too_old

Module: Type[Any]
_too_old = python_too_old(*sys.version_info[:3])
if _too_old is not None:
    # The module proper would not even import (dataclasses are 3.7), and
    # the mgr would show only that ImportError.
    Module = module_that_cannot_run(_too_old)
else:
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
