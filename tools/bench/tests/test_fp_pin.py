"""The simulator entry points run numpy without its AVX-512 paths (see
fp_pin), so their figures are those committed, on any x86_64 host.  On a
host without AVX-512 there is nothing to pin and the check is that none
runs; on one with it (this project's machines from session 38) the
subprocess fails the check unless pin() disabled them."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

PROBE = ('import sys; sys.path.insert(0, sys.argv[1]); import fp_pin; fp_pin.pin(); '
         'import numpy.core._multiarray_umath as m; '
         'print(sorted(k for k, v in m.__cpu_features__.items() '
         'if v and k.startswith("AVX512") and k in m.__cpu_dispatch__))')


def _avx512_in_use(env: dict) -> str:
    out = subprocess.run([sys.executable, '-c', PROBE, str(HERE)], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_pin_turns_numpys_avx512_paths_off_before_numpy_loads() -> None:
    env = {k: v for k, v in os.environ.items() if k != fp_pin.ENV}
    assert _avx512_in_use(env) == '[]'


def test_an_operators_own_setting_is_left_as_it_is() -> None:
    env = {k: v for k, v in os.environ.items() if k != fp_pin.ENV}
    env[fp_pin.ENV] = ''     # empty: run natively
    native = _avx512_in_use(env)
    if fp_pin.has_avx512():
        assert 'AVX512F' in native
    else:
        assert native == '[]'


def test_flags_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / 'cpuinfo'
    info.write_text('processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512cd\n')
    assert fp_pin.has_avx512(info)
    info.write_text('processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512_vnni_x\n')
    assert not fp_pin.has_avx512(info)
    assert not fp_pin.has_avx512(tmp_path / 'missing')


def test_every_simulator_entry_point_pins_before_it_loads_the_simulator() -> None:
    # A new benchmark script that runs the simulator unpinned gives figures
    # that differ from the committed ones on an AVX-512 host (see fp_pin).
    loads_sim = ('import policies', 'import run', 'from simulator', 'import simulator')
    # Real-cluster drivers: their tiertune runs inside ceph-mgr, whose numpy
    # pin() cannot reach, and their figures are the cluster's.
    cluster_only = {'cluster_backend.py'}
    checked = []
    for script in sorted(HERE.glob('*.py')):
        text = script.read_text()
        if "__name__ == '__main__'" not in text or script.name in cluster_only:
            continue
        first = min((text.find(s) for s in loads_sim if s in text), default=-1)
        if first < 0:
            continue
        checked.append(script.name)
        assert 0 <= text.find('fp_pin.pin()') < first, f'{script.name} loads the simulator unpinned'
    assert {'run.py', 'seeds.py', 'warm_start.py', 'sim_speed.py'} <= set(checked)
