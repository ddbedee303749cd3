"""Real-cluster fixtures: a local Ceph cluster per test session (tools/localcluster).

Needs root (loop devices, a blkio cgroup) and Debian's Ceph packages; `make
check` installs them.  When a test fails the cluster's logs are kept and
their path printed; otherwise the directory is removed.
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / 'tools'))

from localcluster import ClusterError, ClusterSpec, LocalCluster, MiB  # noqa: E402

WORKUNITS = REPO / 'qa' / 'workunits' / 'tiertune'
TICK_S = 2
_failed: List[str] = []


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        _failed.append(item.nodeid)


def cluster_dir(name: str) -> Path:
    base = Path(os.environ.get('TIERTUNE_TEST_DIR', tempfile.gettempdir()))
    return Path(tempfile.mkdtemp(prefix=f'tiertune-{name}-', dir=base))


def finish(c: LocalCluster) -> None:
    keep = bool(_failed)
    c.stop(keep_logs=keep)
    if keep:
        print(f'\n{c.dir}: logs kept (failed: {", ".join(_failed)})', file=sys.stderr)


@pytest.fixture(scope='session')
def cluster() -> Iterator[LocalCluster]:
    """2 fast + 2 slow OSDs, a 256 MiB writeback tier `cache` over `base`,
    tiertune enabled and ticking every TICK_S seconds, a standby mgr."""
    spec = ClusterSpec(target_max_bytes=256 * MiB, standby_mgr=True)
    c = LocalCluster(cluster_dir('main'), spec)
    try:
        c.start()
    except BaseException:
        c.stop(keep_logs=True)
        raise
    c.ceph('config', 'set', 'mgr', 'mgr/tiertune/sleep_interval', str(TICK_S))
    yield c
    finish(c)


def status(c: LocalCluster, *args: str) -> Dict[str, Any]:
    return json.loads(c.ceph('tiertune', 'status', *args, '--format', 'json').stdout)


def cache_row(c: LocalCluster) -> Dict[str, Any]:
    (row,) = [r for r in status(c)['pools'] if r['pool'] == c.spec.cache_pool]
    return row


def wait_row(c: LocalCluster, what: str, pred: Any, timeout: float = 90) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    row: Dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = cache_row(c)
        if pred(row):
            return row
        time.sleep(1)
    raise AssertionError(f'timed out after {timeout}s waiting for {what}; last status row: '
                         f'{json.dumps(row)}')


__all__ = [
    'WORKUNITS',
    'ClusterError',
    'ClusterSpec',
    'LocalCluster',
    'MiB',
    'cache_row',
    'cluster_dir',
    'finish',
    'status',
    'wait_row',
]


def fail_over(c: LocalCluster) -> None:
    """`ceph mgr fail` the active mgr; returns once another answers tiertune
    commands."""
    old = c.active_mgr()
    c.ceph('mgr', 'fail', old)
    c.wait_for('another mgr to take over',
               lambda: c.active_mgr() not in ('', old) and
               c.ceph('tiertune', 'status', check=False).returncode == 0, 120)


def forget_stored_samples(c: LocalCluster) -> None:
    """Remove tiertune's stored samples, as a mgr down longer than the
    history's window finds them (none to restore)."""
    keys = json.loads(c.ceph('config-key', 'ls').stdout)
    for key in [k for k in keys if k.startswith('mgr/tiertune/samples/')]:
        c.ceph('config-key', 'rm', key)
