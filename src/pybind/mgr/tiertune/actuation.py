"""Turn a ratio change into an ordered batch of `osd pool set` commands.

Pure.  The mon checks each ratio against 0..1 only, never the ordering, so
the order of the commands is what keeps dirty <= dirty_high <= full true
after every single command, not just at the end.
"""

from typing import List, Tuple

from .topology import Ratios

POOL_VARS = {'dirty': 'cache_target_dirty_ratio',
             'dirty_high': 'cache_target_dirty_high_ratio',
             'full': 'cache_target_full_ratio'}


def plan(current: Ratios, target: Ratios) -> List[Tuple[str, float]]:
    """[(pool var, value), ...] taking current to target such that every
    intermediate state keeps 0 <= dirty <= dirty_high <= full <= 1 (given
    both endpoints do).  Ratios that do not change are left out."""
    raise NotImplementedError
