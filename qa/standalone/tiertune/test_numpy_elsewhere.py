"""A real ceph-mgr where another module holds numpy.

ceph-mgr loads numpy into one module's Python sub-interpreter per process
(numpy's Cython extensions refuse a second), and it loads every installed
module at start, in alphabetical order.  A module that imports numpy and
sorts before tiertune therefore takes it.  The mgr then marks tiertune
unable to run in any case; what tiertune owes the operator is the reason in
words they can act on (not the bare ImportError), and its options kept."""

import json

from conftest import cluster_dir, finish
from localcluster import ClusterSpec, LocalCluster

# ceph-mgr loads a folder as a module only if it holds module.py; this one
# sorts before 'tiertune', so the mgr loads it (and numpy) first.
NUMPY_FIRST = '''
import numpy  # noqa: F401
from mgr_module import MgrModule


class Module(MgrModule):
    pass
'''


def test_with_numpy_held_by_a_module_loaded_first_tiertune_says_why_it_cannot_run(tmp_path):
    first = tmp_path / 'numpyfirst'
    first.mkdir()
    (first / 'module.py').write_text(NUMPY_FIRST)
    (first / '__init__.py').write_text('from .module import Module  # noqa: F401\n')
    c = LocalCluster(cluster_dir('numpy'), ClusterSpec(fast_osds=0, slow_osds=0, make_tier=False,
                                                       bench_seconds=0, enable_modules=()),
                     extra_modules={'numpyfirst': first})
    try:
        c.start()

        def listed() -> dict:
            ls = c.ceph_json('mgr', 'module', 'ls', timeout=10)
            return {m['name']: m for m in ls.get('disabled_modules', [])}.get('tiertune', {})
        entry = c.wait_for('tiertune in mgr module ls', listed, timeout=60)
        assert entry['can_run'] is False
        why = entry['error_string']
        assert why.startswith('numpy cannot be imported (') and 'holds numpy' in why
        assert 'sleep_interval' in entry['module_options']

        # enable refuses, with the reason.
        p = c.ceph('mgr', 'module', 'enable', 'tiertune', check=False)
        assert p.returncode != 0
        assert 'cannot run' in p.stderr and 'holds numpy' in p.stderr

        # Enabled anyway (or enabled before the other module came): a
        # health warning names tiertune and the reason.
        c.ceph('mgr', 'module', 'enable', 'tiertune', '--force')

        def warned() -> bool:
            health = c.ceph_json('health', 'detail', timeout=10)
            check = health.get('checks', {}).get('MGR_MODULE_DEPENDENCY', {})
            detail = json.dumps(check)
            return 'tiertune' in detail and 'holds numpy' in detail
        c.wait_for('MGR_MODULE_DEPENDENCY for tiertune', warned, timeout=60)
    finally:
        finish(c)
