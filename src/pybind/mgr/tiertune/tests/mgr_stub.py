"""A stand-in for ceph-mgr's C extension `ceph_module`, as upstream's mgr
tests use one: with it, the packaged /usr/share/ceph/mgr/mgr_module.py and
the real tiertune Module class import and run outside ceph-mgr.  Used by the
unit tests and by the module cost benchmark (tools/bench/module_cost.py).
"""

import sys
import types
from pathlib import Path
from typing import Any, Dict, List

MGR_DIR = Path('/usr/share/ceph/mgr')
SRC_MGR = Path(__file__).resolve().parents[2]   # src/pybind/mgr


class _StubBase:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class _StubMgrModule(_StubBase):
    """The C++ side of MgrModule, answering what construction asks for."""

    def _ceph_get_option(self, key: str) -> Any:
        # log_file: mgr_module builds (but, with log_to_file off, never opens) a FileHandler.
        return {'debug_mgr': '1/5', 'log_file': '/dev/null'}.get(key)

    def _ceph_get_module_option(self, module: str, key: str, *args: Any) -> Any:
        return None

    def _ceph_get_version(self) -> str:
        return '16.2.15'

    def _ceph_log(self, *args: Any) -> None:
        pass

    # The module's config-key store, per test (see make_module): a restarted
    # module sees what the one before it stored.
    store: Dict[str, str] = {}
    health: Dict[str, Any] = {}
    cluster_log_lines: List[str] = []

    def _ceph_get_store(self, key: str) -> Any:
        return self.store.get(key)

    def _ceph_get_store_prefix(self, prefix: str) -> Dict[str, str]:
        return {k: v for k, v in self.store.items() if k.startswith(prefix)}

    def _ceph_set_store(self, key: str, val: Any) -> None:
        if val is None:
            self.store.pop(key, None)
        else:
            self.store[key] = val

    def _ceph_set_health_checks(self, checks: Dict[str, Any]) -> None:
        self.health.clear()
        self.health.update(checks)

    def _ceph_cluster_log(self, channel: str, prio: int, msg: str) -> None:
        self.cluster_log_lines.append(f'{channel}: {msg}')

    # (entity, key) -> value, per test: what the mon's config database answers.
    foreign_options: Dict[Any, Any] = {}

    def _ceph_get_foreign_option(self, entity: str, key: str) -> Any:
        return self.foreign_options.get((entity, key))

    remote_calls: List[Any] = []

    def _ceph_dispatch_remote(self, module: str, method: str, args: Any, kwargs: Any) -> Any:
        self.remote_calls.append((module, method, args, kwargs))


def _install_stub() -> None:
    if 'ceph_module' in sys.modules:
        return
    stub = types.ModuleType('ceph_module')
    for name in ('BasePyOSDMap', 'BasePyOSDMapIncremental', 'BasePyCRUSH',
                 'BaseMgrStandbyModule'):
        setattr(stub, name, type(name, (_StubBase,), {}))
    stub.BaseMgrModule = _StubMgrModule  # type: ignore[attr-defined]
    sys.modules['ceph_module'] = stub




class RecordingGetter:
    """Stands in for MgrModule.get: answers from recorded inputs, remembers
    every name asked for."""

    def __init__(self, inputs: Dict[str, Any]) -> None:
        self.inputs = inputs
        self.asked: List[str] = []

    def __call__(self, name: str) -> Any:
        self.asked.append(name)
        if name == 'pg_ready' and name not in self.inputs:
            # Recorded inputs come from a mgr whose OSDs had all reported.
            return {'pg_ready': True}
        if name == 'pg_stats' and name not in self.inputs:
            # Read after a tier is first seen (splits): recorded inputs
            # without it had every PG reported, its stats valid.
            return {'pg_stats': [{'pgid': f"{p['pool']}.{i:x}", 'stats_invalid': False,
                                  'state': 'active+clean'}
                                 for p in self.inputs['osd_map']['pools']
                                 for i in range(int(p.get('pg_num', 0)))]}
        return self.inputs[name]



def new_module(inputs: Dict[str, Any]) -> Any:
    """The real tiertune Module, built as ceph-mgr builds it (options
    registered first), answering get() from inputs.  A fresh store per call."""
    from tiertune.module import Module
    if not any(o['name'] == 'log_level' for o in Module.MODULE_OPTIONS):
        Module._register_options('tiertune')
    _StubMgrModule.store = {}
    _StubMgrModule.health = {}
    _StubMgrModule.cluster_log_lines = []
    _StubMgrModule.remote_calls = []
    _StubMgrModule.foreign_options = {}
    m = Module('tiertune', None, None)
    getter = RecordingGetter(inputs)
    m.get = getter  # type: ignore[method-assign, assignment]
    m.config_notify()
    return m, getter


_install_stub()
# mgr_module and mgr_util come from Debian's folder (MGR_DIR): importing
# them must not write byte code there, whoever runs the tests and however.
sys.dont_write_bytecode = True
for _p in (str(SRC_MGR), str(MGR_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)
