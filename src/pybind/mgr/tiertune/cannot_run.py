"""The module tiertune loads as when it cannot run in this mgr: it declares
its options as ever, and can_run() says what is wrong and what to do, where
the mgr shows it (`ceph mgr module ls`, the refusal of `ceph mgr module
enable tiertune`, and the MGR_MODULE_DEPENDENCY health warning when it was
enabled before).  Used where numpy cannot be imported (without_numpy.py) and
on a Python older than tiertune's code (python_too_old).

Imports nothing newer than Python 3.6 (this file, options.py and
__init__.py must load there to say so).
"""

from typing import Optional, Tuple, Type

from mgr_module import MgrModule

from .options import OPTIONS

# The oldest Python tiertune's code runs on: `make lint` runs mypy at this
# version on the module (its dataclasses alone need 3.7, which mypy no
# longer checks against).  ceph-mgr runs the
# Python it was built with: Debian's and Ubuntu's packages a recent one,
# container images built on CentOS Stream 8 (Pacific's, Quincy's) 3.6,
# on CentOS Stream 9 (Reef's) 3.9.
MIN_PYTHON = (3, 8)


def python_too_old(major: int, minor: int, micro: int) -> Optional[str]:
    """Why tiertune cannot run on this Python (sys.version_info), or None."""
    if (major, minor) >= MIN_PYTHON:
        return None
    have = f'{major}.{minor}.{micro}'
    need = '.'.join(str(v) for v in MIN_PYTHON)
    return (f'tiertune needs Python {need} or later, and this ceph-mgr runs Python {have} '
            f'(ceph-mgr runs the Python it was built with: container images built on '
            f'CentOS Stream 8 have 3.6): run it on a mgr built with a later Python')


def module_that_cannot_run(why: str) -> Type[MgrModule]:
    class Module(MgrModule):
        # The same options as the module proper, declared to the mgr as ever.
        MODULE_OPTIONS = list(OPTIONS)

        @staticmethod
        def can_run() -> Tuple[bool, str]:
            return False, why

    return Module
