"""tiertune where numpy cannot be imported (another mgr module holds it, or
python3-numpy is missing): it loads, and says why it cannot run, as the mgr
asks modules to (MgrModule.can_run)."""

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROBE = '''
import json, sys
sys.path[:0] = [{tests!r}, {mgr!r}]
import mgr_stub  # noqa: F401  (ceph_module, so that mgr_module imports)
if {block}:
    # What the mgr's second numpy import meets: an ImportError.
    sys.modules['numpy'] = None
if {python!r}:
    # A mgr built with an older Python (only what __init__ reads of it).
    sys.version_info = {python!r}
import tiertune
from tiertune.options import OPTION_NAMES
ok, why = tiertune.Module.can_run()
names = [o['name'] for o in tiertune.Module.MODULE_OPTIONS]
print(json.dumps({{'ok': ok, 'why': why, 'options': names, 'expected': list(OPTION_NAMES),
                  'module': tiertune.Module.__module__}}))
'''


def probe(block: bool, python: tuple = ()) -> dict:
    code = PROBE.format(tests=str(HERE), mgr=str(HERE.parents[1]), block=block, python=python)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_without_numpy_the_module_loads_and_says_why_it_cannot_run() -> None:
    r = probe(block=True)
    assert r['ok'] is False
    assert r['why'].startswith('numpy cannot be imported (')
    assert 'another mgr module loaded before tiertune holds numpy' in r['why']
    assert 'python3-numpy' in r['why']
    # Disabling the other module would not free numpy: the mgr loads it anyway.
    assert "remove that module's package or folder" in r['why'] and 'disable' not in r['why']
    # Its options stay declared meanwhile.
    assert r['options'] == r['expected']
    assert r['module'] == 'tiertune.cannot_run'     # the class without_numpy gives


def test_with_numpy_it_is_the_module_proper() -> None:
    r = probe(block=False)
    assert (r['ok'], r['module']) == (True, 'tiertune.module')
    assert r['options'][:len(r['expected'])] == r['expected']


def test_on_a_python_too_old_the_module_loads_and_says_why_it_cannot_run() -> None:
    # Container images built on CentOS Stream 8 run ceph-mgr on Python 3.6,
    # where importing the module proper fails on dataclasses with only that
    # ImportError to show; on 3.9 (CentOS Stream 9) it used to load and fail
    # every tick on zip(strict=), which make lint now checks at 3.8.
    r = probe(block=False, python=(3, 6, 8, 'final', 0))
    assert r['ok'] is False
    assert r['why'].startswith('tiertune needs Python 3.8 or later, and this ceph-mgr runs '
                               'Python 3.6.8')
    assert r['options'] == r['expected']
    assert r['module'] == 'tiertune.cannot_run'
    for fine in ((3, 8, 0, 'final', 0), (3, 9, 16, 'final', 0)):
        assert probe(block=False, python=fine)['module'] == 'tiertune.module'
