"""A real one-host Ceph cluster with a writeback cache tier, from Debian's packages.

Everything lives under one directory: config, keys, daemon data, logs, pid
files, the mgr module folder and the slow disks' images; only the admin
sockets live apart, in a short /tmp/lc-* directory (see SOCKET_PARENT).
State that teardown needs (PIDs, loop devices, the cgroup, the socket
directory) is written to cluster.json as soon as it
exists, so `stop` works even after a start that died half-way.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import processes, slowdisk
from .spec import ClusterSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODULES_DIR = REPO_ROOT / 'src' / 'pybind' / 'mgr'
STOCK_MGR_MODULES = Path('/usr/share/ceph/mgr')
OUR_MODULES = ('tiertune',)
# restful imports cryptography (PyO3), which cannot initialise twice in one
# process: once the dashboard has loaded, restful fails and the mgr reports it.
LEFT_OUT_STOCK_MODULES = ('restful', '__pycache__')
STATE_FILE = 'cluster.json'
# A UNIX socket path holds at most 107 bytes (sun_path).  An admin socket
# that cannot bind is not only a missing `ceph daemon`: Pacific's daemons
# queue `tell` commands to the admin socket's thread, so with no socket every
# `ceph tell osd.N ...` waits forever.  The sockets live in a short directory
# of their own, wherever the cluster's directory is: /tmp/lc-XXXXXXXX/ plus
# the longest name (a client's, with a 7-digit pid) is about 40 bytes.
SOCKET_PARENT = Path('/tmp')
FAST_CLASS = 'ssd'
SLOW_CLASS = 'hdd'
FAST_RULE = 'fast'
SLOW_RULE = 'slow'


class ClusterError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


class LocalCluster:
    def __init__(self, directory: Path, spec: Optional[ClusterSpec] = None,
                 modules_dir: Path = DEFAULT_MODULES_DIR,
                 extra_modules: Optional[Dict[str, Path]] = None) -> None:
        self.dir = Path(directory).resolve()
        self.spec = spec or ClusterSpec()
        self.modules_dir = Path(modules_dir).resolve()
        self.extra_modules = dict(extra_modules or {})
        self.state: Dict[str, Any] = {'pids': {}, 'loops': [], 'cgroup': None}
        self.bench: Dict[str, float] = {}

    # ----- paths and environment -------------------------------------------------
    @property
    def conf(self) -> Path:
        return self.dir / 'ceph.conf'

    @property
    def log_dir(self) -> Path:
        return self.dir / 'log'

    @property
    def env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env['CEPH_CONF'] = str(self.conf)
        return env

    @classmethod
    def attach(cls, directory: Path) -> 'LocalCluster':
        """A handle on a cluster started earlier (by this or another process)."""
        directory = Path(directory).resolve()
        state = json.loads((directory / STATE_FILE).read_text())
        c = cls(directory, ClusterSpec.from_dict(state['spec']),
                Path(state.get('modules_dir', DEFAULT_MODULES_DIR)))
        c.state = state
        c.bench = state.get('bench', {})
        return c

    def _save_state(self) -> None:
        self.state['spec'] = self.spec.to_dict()
        self.state['modules_dir'] = str(self.modules_dir)
        self.state['bench'] = self.bench
        tmp = self.dir / (STATE_FILE + '.tmp')
        tmp.write_text(json.dumps(self.state, indent=2))
        tmp.replace(self.dir / STATE_FILE)

    def log(self, msg: str) -> None:
        line = f'{time.strftime("%H:%M:%S")} localcluster: {msg}'
        print(line, file=sys.stderr, flush=True)
        if self.log_dir.is_dir():
            with open(self.log_dir / 'harness.log', 'a') as f:
                f.write(line + '\n')

    # ----- running commands -----------------------------------------------------
    def run(self, argv: List[str], check: bool = True, timeout: float = 120,
            input: Optional[str] = None) -> subprocess.CompletedProcess:
        try:
            p = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                               timeout=timeout, input=input)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f'timed out after {timeout}s: {" ".join(argv)}') from e
        if check and p.returncode != 0:
            raise ClusterError(f'{" ".join(argv)} -> rc={p.returncode}: {p.stderr.strip()}')
        return p

    def ceph(self, *args: str, check: bool = True, timeout: float = 60,
             input: Optional[str] = None) -> subprocess.CompletedProcess:
        return self.run(['ceph', '--connect-timeout', str(int(timeout)), *args],
                        check=check, timeout=timeout + 5, input=input)

    def ceph_json(self, *args: str, timeout: float = 60) -> Any:
        out = self.ceph(*args, '--format', 'json', timeout=timeout).stdout
        return json.loads(out) if out.strip() else None

    def wait_for(self, what: str, pred: Any, timeout: float, interval: float = 0.5) -> Any:
        deadline = time.monotonic() + timeout
        last_err: Optional[Exception] = None
        while time.monotonic() < deadline:
            try:
                v = pred()
                if v:
                    return v
            except (ClusterError, ValueError, KeyError) as e:
                last_err = e
            time.sleep(interval)
        raise ClusterError(f'timed out after {timeout:.0f}s waiting for {what}'
                           + (f' (last error: {last_err})' if last_err else ''))

    # ----- lifecycle ------------------------------------------------------------
    def start(self) -> 'LocalCluster':
        t0 = time.monotonic()
        if (self.dir / STATE_FILE).exists():
            raise ClusterError(f'{self.dir} already holds a cluster; stop it first')
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ('log', 'run', 'crash', 'pycache'):
            (self.dir / sub).mkdir(exist_ok=True)
        self._save_state()
        try:
            self._make_socket_dir()
            self._make_module_dir()
            self._make_slow_disks()
            self._write_conf()
            self._make_keys_and_mon()
            self._start_mgrs()
            self._start_osds()
            self._make_crush_rules()
            self._measure_tiers()
            self._make_tier()
            self._enable_modules()
        except BaseException:
            self.log(f'start failed; logs in {self.log_dir}')
            raise
        self.log(f'cluster up in {time.monotonic() - t0:.1f}s; export CEPH_CONF={self.conf}')
        return self

    def stop(self, keep_logs: bool = False) -> None:
        pids = [int(p) for p in self.state.get('pids', {}).values()]
        stopped = processes.stop_pids(pids, marker=str(self.dir))
        self.log(f'stopped {len(stopped)} daemon(s)')
        for dev in self.state.get('loops', []):
            slowdisk.detach_loop(dev)
        cg = self.state.get('cgroup')
        if not slowdisk.remove_cgroup(Path(cg) if cg else None):
            self.log(f'cgroup {cg} still has tasks; left in place')
        sock_dir = self.state.get('socket_dir')
        if sock_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        self.state['pids'] = {}
        self.state['loops'] = []
        if keep_logs:
            for child in self.dir.iterdir():
                if child.name not in ('log', STATE_FILE, 'ceph.conf'):
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child, ignore_errors=True)
                    else:
                        child.unlink(missing_ok=True)
            self._save_state()
            self.log(f'logs kept in {self.log_dir}')
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ----- steps ---------------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        return Path(self.state['socket_dir'])

    def _make_socket_dir(self) -> None:
        self.state['socket_dir'] = tempfile.mkdtemp(prefix='lc-', dir=SOCKET_PARENT)
        self._save_state()

    def _make_module_dir(self) -> None:
        """ceph-mgr loads every module from one folder: the stock modules must
        be there too, so link them and put the working tree's module beside
        them. Edits in the tree take effect on the next mgr start."""
        mdir = self.dir / 'mgr-modules'
        mdir.mkdir(exist_ok=True)
        for entry in STOCK_MGR_MODULES.iterdir():
            if entry.name in OUR_MODULES or entry.name in LEFT_OUT_STOCK_MODULES:
                continue
            (mdir / entry.name).symlink_to(entry)
        for name in OUR_MODULES:
            (mdir / name).symlink_to(self.modules_dir / name)
        for name, path in self.extra_modules.items():
            (mdir / name).symlink_to(Path(path).resolve())

    def _make_slow_disks(self) -> None:
        s = self.spec
        if s.slow_osds == 0:
            return
        group = slowdisk.make_cgroup(f'localcluster-{uuid.uuid4().hex[:8]}')
        self.state['cgroup'] = str(group)
        self._save_state()
        for i in range(s.slow_osds):
            dev = slowdisk.attach_loop(self.dir / f'slow{i}.img', s.slow_disk_bytes)
            self.state['loops'].append(dev)
            self._save_state()
            slowdisk.throttle(group, dev, s.slow_write_bps, s.slow_read_bps,
                              s.slow_write_iops, s.slow_read_iops)
        self.log(f'slow disks {self.state["loops"]} throttled in {group}: '
                 f'write {s.slow_write_bps >> 20} MiB/s {s.slow_write_iops} IOPS, '
                 f'read {s.slow_read_bps >> 20} MiB/s {s.slow_read_iops} IOPS')

    def _osd_ids(self) -> List[int]:
        return list(range(self.spec.fast_osds + self.spec.slow_osds))

    def _is_slow(self, osd: int) -> bool:
        return osd >= self.spec.fast_osds

    def _write_conf(self) -> None:
        s, d = self.spec, self.dir
        self.state['fsid'] = str(uuid.uuid4())
        self.state['mon_port'] = free_port()
        lines = [
            '[global]',
            f'fsid = {self.state["fsid"]}',
            f'mon host = [v2:127.0.0.1:{self.state["mon_port"]}]',
            'public addr = 127.0.0.1',
            'auth cluster required = cephx',
            'auth service required = cephx',
            'auth client required = cephx',
            f'keyring = {d}/keyring',
            f'run dir = {d}/run',
            f'admin socket = {self.socket_dir}/$name.asok',
            f'log file = {d}/log/$name.log',
            f'pid file = {d}/run/$name.pid',
            f'crash dir = {d}/crash',
            f'exporter sock dir = {d}/run',
            'osd pool default size = 1',
            'osd pool default min size = 1',
            'osd pool default pg autoscale mode = off',
            'mon allow pool size one = true',
            'mon allow pool delete = true',
            'mon warn on pool no redundancy = false',
            'mon max pg per osd = 1000',
            'osd crush chooseleaf type = 0',
            'mon_osd_down_out_interval = 0',
            '',
            '[client]',
            # Clients run concurrently (a workload and `ceph` status polls):
            # one socket path per process, not one per name.
            f'admin socket = {self.socket_dir}/$name.$pid.asok',
            '',
            '[mon]',
            f'mon data = {d}/mon.$id',
            # Enabled in the first MgrMap: in Pacific every later
            # `mgr module enable` respawns the active mgr (about 12 s here).
            f'mgr initial modules = {" ".join(("iostat", *s.enable_modules))}',
            f'mon cluster log file = {d}/log/cluster.log',
            'mon data avail warn = 1',
            'mon data avail crit = 0',
            '',
            '[mgr]',
            f'mgr data = {d}/mgr.$id',
            f'mgr module path = {d}/mgr-modules',
            '',
            '[osd]',
            f'osd data = {d}/osd.$id',
            f'keyring = {d}/osd.$id/keyring',
            'osd objectstore = memstore',
            f'memstore device bytes = {s.memstore_bytes}',
            'osd class update on start = false',
            'osd op queue = wpq',
        ]
        for i, osd in enumerate(o for o in self._osd_ids() if self._is_slow(o)):
            lines += ['', f'[osd.{osd}]', 'osd objectstore = bluestore',
                      f'bluestore block path = {self.state["loops"][i]}',
                      'bluestore block create = false',
                      'bluestore fsck on mkfs = false',
                      f'osd memory target = {s.slow_osd_memory_target}']
        self.conf.write_text('\n'.join(lines) + '\n')
        self._save_state()

    def _make_keys_and_mon(self) -> None:
        d = self.dir
        kr = str(d / 'keyring')
        self.run(['ceph-authtool', '--create-keyring', kr, '--gen-key', '-n', 'mon.',
                  '--cap', 'mon', 'allow *'])
        self.run(['ceph-authtool', kr, '--gen-key', '-n', 'client.admin',
                  '--cap', 'mon', 'allow *', '--cap', 'osd', 'allow *',
                  '--cap', 'mds', 'allow *', '--cap', 'mgr', 'allow *'])
        for mgr in self._mgr_ids():
            self.run(['ceph-authtool', kr, '--gen-key', '-n', f'mgr.{mgr}',
                      '--cap', 'mon', 'allow profile mgr', '--cap', 'osd', 'allow *',
                      '--cap', 'mds', 'allow *'])
        self.run(['monmaptool', '--create', '--fsid', self.state['fsid'],
                  '--addv', 'a', f'[v2:127.0.0.1:{self.state["mon_port"]}]',
                  str(d / 'monmap')])
        self.run(['ceph-mon', '-c', str(self.conf), '--mkfs', '-i', 'a',
                  '--monmap', str(d / 'monmap'), '--keyring', kr])
        self._spawn('mon.a', ['ceph-mon', '-c', str(self.conf), '-f', '-i', 'a'])
        self.wait_for('the monitor', lambda: self.ceph('mon', 'stat', check=False,
                                                       timeout=5).returncode == 0, 60)
        self.log(f'mon.a up on 127.0.0.1:{self.state["mon_port"]}')
        # In the mon's config database, as an operator would set them, where
        # the mgr (tiertune's promote-gate model) can read them back too.
        self.ceph('config', 'set', 'osd', 'osd_tier_promote_max_bytes_sec',
                  str(self.spec.promote_max_bytes_sec))
        self.ceph('config', 'set', 'osd', 'osd_tier_promote_max_objects_sec',
                  str(self.spec.promote_max_objects_sec))

    def _mgr_ids(self) -> List[str]:
        return ['x', 'y'] if self.spec.standby_mgr else ['x']

    def mgr_env(self) -> Dict[str, str]:
        env = self.env
        # Keep byte code out of /usr/share/ceph/mgr (a distro-owned folder the
        # module folder links into) and out of the source tree.
        env['PYTHONPYCACHEPREFIX'] = str(self.dir / 'pycache')
        return env

    def start_mgr(self, mgr_id: str) -> None:
        self._spawn(f'mgr.{mgr_id}', ['ceph-mgr', '-c', str(self.conf), '-f', '-i', mgr_id],
                    env=self.mgr_env())

    def stop_daemon(self, name: str) -> None:
        pid = self.state['pids'].pop(name, None)
        if pid is not None:
            processes.stop_pids([int(pid)], marker=str(self.dir))
        self._save_state()

    def _start_mgrs(self) -> None:
        for mgr in self._mgr_ids():
            self.start_mgr(mgr)
        self.wait_for('an active mgr', self._mgr_available, self.spec.mgr_timeout_s)
        self.log(f'mgr {"+".join(self._mgr_ids())} up (active: {self.active_mgr()})')

    def _mgr_available(self) -> bool:
        return bool(self.ceph_json('mgr', 'stat', timeout=10).get('available'))

    def active_mgr(self) -> str:
        return str(self.ceph_json('mgr', 'stat', timeout=10).get('active_name', ''))

    def _start_osds(self) -> None:
        s = self.spec
        group = self.state.get('cgroup')
        mkfs: List[Any] = []
        for osd in self._osd_ids():
            osd_uuid = str(uuid.uuid4())
            got = self.ceph('osd', 'new', osd_uuid).stdout.strip()
            if int(got) != osd:
                raise ClusterError(f'expected osd.{osd}, mon allocated osd.{got}')
            data = self.dir / f'osd.{osd}'
            data.mkdir()
            self.ceph('auth', 'get-or-create', f'osd.{osd}', 'mon', 'allow profile osd',
                      'mgr', 'allow profile osd', 'osd', 'allow *',
                      '-o', str(data / 'keyring'))
            argv = ['ceph-osd', '-c', str(self.conf), '-i', str(osd), '--mkfs',
                    '--osd-uuid', osd_uuid]
            mkfs.append((osd, subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True)))
        for osd, proc in mkfs:
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                raise ClusterError(f'mkfs of osd.{osd} failed: {out.strip()[-500:]}')
            cg = Path(group) / 'cgroup.procs' if (group and self._is_slow(osd)) else None
            self._spawn(f'osd.{osd}', ['ceph-osd', '-c', str(self.conf), '-f', '-i', str(osd)],
                        cgroup_procs=cg)
        n = len(self._osd_ids())
        self.wait_for(f'{n} OSDs up', lambda: self.ceph_json('osd', 'stat')['num_up_osds'] == n,
                      120)
        for osd in self._osd_ids():
            cls = SLOW_CLASS if self._is_slow(osd) else FAST_CLASS
            self.ceph('osd', 'crush', 'rm-device-class', f'osd.{osd}')
            self.ceph('osd', 'crush', 'set-device-class', cls, f'osd.{osd}')
        self.log(f'{s.fast_osds} fast (memstore, class {FAST_CLASS}) + {s.slow_osds} slow '
                 f'(bluestore on throttled loop, class {SLOW_CLASS}) OSDs up')

    def _make_crush_rules(self) -> None:
        for rule, cls, count in ((FAST_RULE, FAST_CLASS, self.spec.fast_osds),
                                 (SLOW_RULE, SLOW_CLASS, self.spec.slow_osds)):
            if count:
                self.ceph('osd', 'crush', 'rule', 'create-replicated', rule, 'default', 'osd',
                          cls)

    def create_pool(self, name: str, pg_num: int, rule: str) -> None:
        self.ceph('osd', 'pool', 'create', name, str(pg_num), str(pg_num), 'replicated', rule,
                  '--autoscale-mode=off')
        self.ceph('osd', 'pool', 'application', 'enable', name, 'rados')

    def wait_clean(self, timeout: float = 120) -> None:
        def clean() -> bool:
            st = self.ceph_json('pg', 'stat')['pg_summary']
            total = st.get('num_pgs', 0)
            by_state = {s['name']: s['num'] for s in st.get('num_pg_by_state', [])}
            return total > 0 and by_state.get('active+clean', 0) == total
        self.wait_for('all PGs active+clean', clean, timeout)

    def rados_bench_write(self, pool: str, seconds: int, block: int = 4 << 20,
                          threads: int = 16) -> float:
        """MB/s (10^6) as rados bench reports it."""
        out = self.run(['rados', '-p', pool, 'bench', str(seconds), 'write', '-b', str(block),
                        '-t', str(threads), '--no-cleanup', '--format', 'json'],
                       timeout=seconds + 120).stdout
        return float(json.loads(out[out.index('{'):])['bandwidth'])

    def _measure_tiers(self) -> None:
        s = self.spec
        if s.bench_seconds <= 0 or s.slow_osds == 0 or s.fast_osds == 0:
            return
        for rule in (FAST_RULE, SLOW_RULE):
            pool = f'bench-{rule}'
            self.create_pool(pool, 8, rule)
        self.wait_clean()
        for rule in (FAST_RULE, SLOW_RULE):
            self.bench[rule] = self.rados_bench_write(f'bench-{rule}', s.bench_seconds)
            self.ceph('osd', 'pool', 'rm', f'bench-{rule}', f'bench-{rule}',
                      '--yes-i-really-really-mean-it')
        ratio = self.bench[FAST_RULE] / max(self.bench[SLOW_RULE], 1e-9)
        self.bench['ratio'] = ratio
        self._save_state()
        self.log(f'rados bench {s.bench_seconds}s write 4 MiB x16: fast tier '
                 f'{self.bench[FAST_RULE]:.1f} MB/s, slow tier {self.bench[SLOW_RULE]:.1f} MB/s '
                 f'({ratio:.1f}x)')

    def _make_tier(self) -> None:
        s = self.spec
        if not s.make_tier:
            return
        base, cache = s.base_pool, s.cache_pool
        self.create_pool(base, s.base_pg_num, SLOW_RULE if s.slow_osds else FAST_RULE)
        self.create_pool(cache, s.cache_pg_num, FAST_RULE if s.fast_osds else SLOW_RULE)
        self.ceph('osd', 'tier', 'add', base, cache)
        self.ceph('osd', 'tier', 'cache-mode', cache, 'writeback')
        self.ceph('osd', 'tier', 'set-overlay', base, cache)
        settings = [
            ('hit_set_type', 'bloom'),
            ('hit_set_count', s.hit_set_count),
            ('hit_set_period', s.hit_set_period),
            ('target_max_bytes', s.target_max_bytes),
            ('target_max_objects', s.target_max_objects),
            ('cache_target_dirty_ratio', s.dirty_ratio),
            ('cache_target_dirty_high_ratio', s.dirty_high_ratio),
            ('cache_target_full_ratio', s.full_ratio),
            ('cache_min_flush_age', s.min_flush_age),
            ('cache_min_evict_age', s.min_evict_age),
            ('min_read_recency_for_promote', s.min_read_recency_for_promote),
            ('min_write_recency_for_promote', s.min_write_recency_for_promote),
        ]
        for var, val in settings:
            self.ceph('osd', 'pool', 'set', cache, var, str(val))
        self.wait_clean()
        self.log(f'tier {cache} (writeback) over {base}: target_max_bytes '
                 f'{s.target_max_bytes >> 20} MiB, ratios {s.dirty_ratio}/{s.dirty_high_ratio}/'
                 f'{s.full_ratio}, hit sets bloom {s.hit_set_count}x{s.hit_set_period}s')
        self.log(f'promotion: min_read_recency {s.min_read_recency_for_promote}, '
                 f'min_write_recency {s.min_write_recency_for_promote}, '
                 f'osd_tier_promote_max_bytes_sec {s.promote_max_bytes_sec}, '
                 f'osd_tier_promote_max_objects_sec {s.promote_max_objects_sec}')

    def _enable_modules(self) -> None:
        # Already enabled through `mgr initial modules`; wait until they answer.
        for name in self.spec.enable_modules:
            self.wait_module(name)

    def enable_module(self, name: str, timeout: float = 60) -> None:
        """Enable a mgr module and wait until the active mgr answers one of its
        commands: a module that hangs the mgr at load fails here, in time."""
        self.ceph('mgr', 'module', 'enable', name, timeout=timeout)
        self.wait_module(name, timeout)

    def wait_module(self, name: str, timeout: float = 60) -> None:
        self.wait_for(f'mgr module {name} to answer',
                      lambda: self.ceph(name, 'status', check=False, timeout=10).returncode == 0
                      if name == 'tiertune' else self._module_listed(name), timeout)
        self.log(f'mgr module {name} enabled')

    def _module_listed(self, name: str) -> bool:
        ls = self.ceph_json('mgr', 'module', 'ls', timeout=10)
        return name in ls.get('enabled_modules', []) + ls.get('always_on_modules', [])

    # ----- helpers ------------------------------------------------------------
    def _spawn(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None,
               cgroup_procs: Optional[Path] = None) -> int:
        pid = processes.spawn(argv, self.log_dir / f'{name}.stdout', env=env or self.env,
                              cgroup_procs=cgroup_procs)
        self.state['pids'][name] = pid
        self._save_state()
        return pid
