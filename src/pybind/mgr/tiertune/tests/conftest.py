"""Fixtures: real mgr data recorded from a cluster, and the real Module class
on a stub ceph_module (mgr_stub.py) so mgr_module imports outside ceph-mgr."""

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import settings

from mgr_stub import RecordingGetter, new_module

__all__ = ['RecordingGetter', 'new_module']

FIXTURES = Path(__file__).resolve().parent / 'fixtures'

# CI (CI=true) runs the property tests with fixed examples and no deadline:
# a submission must not fail by chance, nor on a slow, loaded machine.  Runs
# elsewhere keep exploring new random examples; a falsifying one found there
# goes into the test as an @example.
settings.register_profile('ci', derandomize=True, deadline=None)
if os.environ.get('CI'):
    settings.load_profile('ci')


def load_fixture(name: str) -> Dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture(scope='session')
def burst() -> Dict[str, Any]:
    """Real dump-inputs recorded through an overwrite burst (see the file's 'what')."""
    return load_fixture('overwrite_burst.json')


def samples_by_phase(rec: Dict[str, Any], phase: str) -> List[Dict[str, Any]]:
    return [s for s in rec['samples'] if s['phase'] == phase]


def force_change(monkeypatch: Any, target: Any) -> None:
    """Make the controller ask for `target`, a Ratios (the law itself is
    tested alone)."""
    import dataclasses

    from tiertune import controller
    real = controller.decide

    def decide(inp: Any) -> Any:
        return dataclasses.replace(real(inp), action='change', next=target,
                                   recommended=target, reasons=('test: forced',))
    monkeypatch.setattr(controller, 'decide', decide)


def restart(get: Any, history_size: int = 120, sleep_interval: int = 30) -> Any:
    """A new Module on the same store: a mgr restart or failover."""
    from tiertune.module import Module
    m2 = Module('tiertune', None, None)
    m2.get = get  # type: ignore[method-assign]
    m2.history_size, m2.sleep_interval = history_size, sleep_interval
    return m2


@pytest.fixture
def make_module() -> Any:
    """Build the real tiertune Module class on the stub ceph_module, the way
    ceph-mgr does (options registered first)."""
    return new_module


# A float may differ from the rebuild's in its last bits: numpy 1.24 on a
# CPU with AVX-512 sums and dots a view into the cache's larger buffer and
# a freshly built array (other alignment) along different SIMD paths
# (seen on this project's AVX-512 machine from session 38: 1-2 ulp, e.g.
# an evict rate of 1048691.0205641417 against ...642).  Without AVX-512
# they are equal bit for bit.  Anything wider is a real difference.
FLOAT_REL_TOL = 1e-12


def same_value(a, b, path='model'):
    """Equal (NaN equal to NaN, floats to FLOAT_REL_TOL), walking
    dataclasses, dicts and sequences; an AssertionError names the first
    difference."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            same_value(getattr(a, f.name), getattr(b, f.name), f'{path}.{f.name}')
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            same_value(a[k], b[k], f'{path}[{k!r}]')
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same_value(x, y, f'{path}[{i}]')
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        assert math.isnan(b), f'{path}: {a} != {b}'
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=FLOAT_REL_TOL, abs_tol=0.0), f'{path}: {a!r} != {b!r}'
    else:
        assert a == b, f'{path}: {a!r} != {b!r}'
