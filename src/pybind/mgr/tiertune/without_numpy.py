"""The module tiertune loads as when numpy cannot be imported.

ceph-mgr loads numpy into one Python sub-interpreter per process: numpy's
Cython extensions refuse a second ("Interpreter change detected - this
module can only be loaded into one interpreter per process").  The mgr
loads every installed module at start, enabled or not, in alphabetical
order, so another module that imports numpy and loads before tiertune
holds it.  The mgr then marks tiertune unable to run whatever tiertune
does, but with only that ImportError for a reason (which names neither
numpy nor a remedy) and none of tiertune's options declared.  Loaded as
this instead, tiertune declares its options and can_run() says what is
wrong and what to do, where the mgr shows it: `ceph mgr module ls`, the
refusal of `ceph mgr module enable tiertune`, and the MGR_MODULE_DEPENDENCY
health warning when tiertune was enabled before.
"""

from typing import Type

from mgr_module import MgrModule

from .cannot_run import module_that_cannot_run


def reason(error: str) -> str:
    return (f'numpy cannot be imported ({error}). Without python3-numpy, install it; with it, '
            f'another mgr module loaded before tiertune holds numpy (ceph-mgr loads numpy '
            f'into one module\'s interpreter per process, every installed module at start, '
            f'enabled or not, in alphabetical order): remove that module\'s package or folder '
            f'and restart the mgr')


def module_without_numpy(error: str) -> Type[MgrModule]:
    return module_that_cannot_run(reason(error))
