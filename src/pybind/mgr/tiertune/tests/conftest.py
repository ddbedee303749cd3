"""Fixtures: real mgr data recorded from a cluster, and the real Module class
on a stub ceph_module (mgr_stub.py) so mgr_module imports outside ceph-mgr."""

import json
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
