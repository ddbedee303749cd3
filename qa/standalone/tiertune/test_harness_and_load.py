"""The module loads in a real ceph-mgr; the harness gives tests a real,
measurably two-speed cluster and cleans up only what it started."""

import errno
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ClusterError, ClusterSpec, LocalCluster, cluster_dir, finish, status

DISTRO_MGR_DIR = Path('/usr/share/ceph/mgr')


def test_slow_tier_is_at_least_5x_slower(cluster):
    bench = cluster.bench
    assert bench['slow'] > 0 and bench['fast'] > 0
    assert bench['ratio'] >= 5, bench
    log = (cluster.log_dir / 'harness.log').read_text()
    assert 'fast tier' in log and 'slow tier' in log


def test_promote_settings_are_logged(cluster):
    log = (cluster.log_dir / 'harness.log').read_text()
    for key in ('min_read_recency', 'min_write_recency', 'osd_tier_promote_max_bytes_sec',
                'osd_tier_promote_max_objects_sec'):
        assert key in log


def test_enable_and_disable_with_the_real_cli(cluster):
    ls = cluster.ceph_json('mgr', 'module', 'ls')
    assert 'tiertune' in ls['enabled_modules']
    try:
        cluster.ceph('mgr', 'module', 'disable', 'tiertune')
        cluster.wait_for('tiertune commands to go away',
                         lambda: cluster.ceph('tiertune', 'status', check=False,
                                              timeout=10).returncode == errno.EOPNOTSUPP, 60)
    finally:
        # In Pacific an enable respawns the mgr; the module must answer again in time.
        cluster.enable_module('tiertune', timeout=90)
    assert 'tiertune' in cluster.ceph_json('mgr', 'module', 'ls')['enabled_modules']
    assert status(cluster)['pools'][0]['pool'] == cluster.spec.cache_pool


def test_mgr_writes_no_byte_code_into_the_distro_folder(cluster):
    # The module folder links into /usr/share/ceph/mgr; byte code written
    # through those links would land in a dpkg-owned folder.
    cluster.ceph('tiertune', 'status')
    assert not list(DISTRO_MGR_DIR.rglob('__pycache__'))


def test_no_cache_pools_on_a_second_cluster_side_by_side(cluster):
    # One slow OSD, so stopping this cluster also has a loop device and a
    # blkio cgroup to clean up.
    bare = LocalCluster(cluster_dir('bare'), ClusterSpec(fast_osds=0, slow_osds=1,
                                                         make_tier=False, bench_seconds=0))
    try:
        bare.start()
        assert bare.state['mon_port'] != cluster.state['mon_port']
        p = bare.ceph('tiertune', 'status')
        assert (p.returncode, p.stdout.strip()) == (0, 'no cache tier pools')
        assert json.loads(bare.ceph('tiertune', 'status', '-f', 'json').stdout)['pools'] == []
        assert status(cluster)['pools'], 'the first cluster must be unaffected'
    finally:
        bare_pids = list(bare.state['pids'].values())
        loops, cgroup = list(bare.state['loops']), bare.state['cgroup']
        finish(bare)
    assert len(bare_pids) == 3 and len(loops) == 1
    for pid in bare_pids:
        assert not Path(f'/proc/{pid}').exists(), f'pid {pid} outlived stop'
    assert not Path(cgroup).exists(), 'blkio cgroup left behind'
    attached = subprocess.run(['losetup', '-a'], capture_output=True, text=True).stdout
    assert str(bare.dir) not in attached, 'loop device left attached'
    for pid in cluster.state['pids'].values():
        assert Path(f'/proc/{pid}').exists(), 'stopping one cluster killed a daemon of another'


def test_a_cluster_in_a_deep_directory_answers_tell():
    # pytest's tmp_path (pytest-of-root/pytest-123/test_.../) is deep enough
    # that sockets under it pass the 107-byte limit of a UNIX socket path;
    # with no admin socket, Pacific's OSDs never answer `ceph tell`.
    base = cluster_dir('deep')
    deep = base / ('d' * 60) / ('e' * 60)
    c = LocalCluster(deep, ClusterSpec(fast_osds=1, slow_osds=0, make_tier=False,
                                       bench_seconds=0, enable_modules=()))
    try:
        c.start()
        assert len(str(c.dir / 'run' / 'osd.0.asok')) > 107
        version = c.ceph_json('tell', 'osd.0', 'version', timeout=30)
        assert version['version'].startswith('16.2.')
        sock_dir = c.socket_dir
        assert (sock_dir / 'osd.0.asok').is_socket()
    finally:
        finish(c)
    assert not sock_dir.exists(), 'socket directory left behind'
    shutil.rmtree(base)


# ceph-mgr loads a folder as a module only if it holds module.py.
HANG_CANARY = '''
# A mgr module that imports scipy.optimize: in a sub-interpreter this hangs
# ceph-mgr at load (scipy.spatial._distance_pybind calls PyGILState_Ensure).
import scipy.optimize  # noqa: F401
from mgr_module import MgrModule


class Module(MgrModule):
    pass
'''


def test_a_module_that_hangs_the_mgr_fails_start_in_time(tmp_path):
    # make check installs python3-scipy; without it this test must fail, not skip.
    assert Path('/usr/lib/python3/dist-packages/scipy').is_dir(), 'python3-scipy is required'
    canary = tmp_path / 'hangcanary'
    canary.mkdir()
    (canary / 'module.py').write_text(HANG_CANARY)
    (canary / '__init__.py').write_text('from .module import Module  # noqa: F401\n')
    timeout = 45
    c = LocalCluster(cluster_dir('hang'), ClusterSpec(fast_osds=0, slow_osds=0, make_tier=False,
                                                      bench_seconds=0, mgr_timeout_s=timeout,
                                                      enable_modules=()),
                     extra_modules={'hangcanary': canary})
    t0 = time.monotonic()
    try:
        with pytest.raises(ClusterError, match='an active mgr'):
            c.start()
        elapsed = time.monotonic() - t0
        assert elapsed < timeout + 60
    finally:
        pids = list(c.state['pids'].values())
        c.stop()
    for pid in pids:
        assert not Path(f'/proc/{pid}').exists() or \
            str(c.dir) not in Path(f'/proc/{pid}/cmdline').read_text(errors='replace')
    assert not c.dir.exists()
