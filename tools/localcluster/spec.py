"""What a local cluster looks like: every size and knob the harness takes."""

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict

MiB = 1 << 20
GiB = 1 << 30


@dataclass
class ClusterSpec:
    # Daemons.  Fast OSDs are memstore (an NVMe stand-in); slow OSDs are
    # BlueStore on loop devices throttled by a blkio cgroup (an HDD stand-in:
    # bandwidth and IOPS limits, concurrency and cached metadata intact).
    fast_osds: int = 2
    slow_osds: int = 2
    standby_mgr: bool = False
    memstore_bytes: int = 3 * GiB
    slow_disk_bytes: int = 6 * GiB
    slow_write_bps: int = 24 * MiB
    slow_read_bps: int = 48 * MiB
    slow_write_iops: int = 300
    slow_read_iops: int = 600
    slow_osd_memory_target: int = 1 * GiB

    # Pools and the writeback tier.
    base_pool: str = 'base'
    cache_pool: str = 'cache'
    base_pg_num: int = 16
    cache_pg_num: int = 16
    target_max_bytes: int = 512 * MiB
    target_max_objects: int = 0
    dirty_ratio: float = 0.4
    dirty_high_ratio: float = 0.6
    full_ratio: float = 0.8
    hit_set_period: int = 60
    hit_set_count: int = 4
    min_flush_age: int = 0
    min_evict_age: int = 0

    # Promotion decides whether writes reach the cache at all: with write
    # recency 1 (Ceph's tier default) new objects are proxied to the base,
    # and the per-OSD throttle (5 MiB/s, 25 objects/s by default) proxies
    # most of the rest.  Always explicit, always logged.
    min_read_recency_for_promote: int = 1
    min_write_recency_for_promote: int = 0
    promote_max_bytes_sec: int = 1024 * MiB
    promote_max_objects_sec: int = 10000

    # Build the base pool and its writeback cache overlay (off: a bare cluster).
    make_tier: bool = True

    # How long the mgr may take to become available: a module that hangs the
    # mgr at load (scipy.optimize in a sub-interpreter does) fails start here.
    mgr_timeout_s: int = 90

    # Start-up measurement of both tiers with rados bench (seconds each; 0 skips).
    bench_seconds: int = 3

    # Which mgr modules to enable after start.
    enable_modules: tuple = ('tiertune',)

    def to_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d['enable_modules'] = list(self.enable_modules)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'ClusterSpec':
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        if 'enable_modules' in kw:
            kw['enable_modules'] = tuple(kw['enable_modules'])
        return cls(**kw)

    def with_overrides(self, overrides: Dict[str, str]) -> 'ClusterSpec':
        """Apply KEY=VALUE strings (from a command line), typed by the field."""
        d = self.to_dict()
        types = {f.name: f.type for f in dataclasses.fields(self)}
        for key, raw in overrides.items():
            key = key.replace('-', '_')
            if key not in types:
                raise KeyError(f'unknown cluster parameter {key!r}')
            cur = d[key]
            if isinstance(cur, bool):
                d[key] = raw.lower() in ('1', 'true', 'yes', 'on')
            elif isinstance(cur, int):
                d[key] = int(raw)
            elif isinstance(cur, float):
                d[key] = float(raw)
            elif isinstance(cur, (list, tuple)):
                d[key] = [m for m in raw.split(',') if m]
            else:
                d[key] = raw
        return ClusterSpec.from_dict(d)
