"""tiertune: watch (and, later, tune) Ceph cache tiers from the mgr.

This file is the mgr glue only: options, the serve loop, commands.  What the
data are and how they are derived lives beside it: topology (OSD map ->
cache tiers), sampling (pool stats -> samples), rates (history -> rates),
report (rows -> table/JSON).
"""

import errno
import json
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from mgr_module import CLIReadCommand, HandleCommandResult, MgrModule, NotifyType, Option

from .rates import HistoryBook
from .report import format_table, status_row
from .sampling import agent_levels, take_samples
from .topology import CacheTier, cache_tiers, is_cache_pool

OPTIONS = [
    Option('sleep_interval', type='secs', default=30, min=1, runtime=True,
           desc='how often to sample the cache pools'),
    Option('history_size', type='uint', default=120, min=2, max=100000, runtime=True,
           desc='samples kept per cache pool'),
]
# Only ours: the mgr appends its logging options to MODULE_OPTIONS, and
# mgr_module keeps their current values as its own state.
OPTION_NAMES = tuple(o['name'] for o in OPTIONS)


class Module(MgrModule):
    NOTIFY_TYPES = [NotifyType.osd_map]
    MODULE_OPTIONS = list(OPTIONS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shutdown = threading.Event()
        # Set to end the current wait early: on shutdown, and when options
        # change (a shorter sleep_interval should not wait out the old one).
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self.sleep_interval = 30
        self.history_size = 120
        self._tiers: Dict[int, CacheTier] = {}
        # Set when an osd_map notification arrives: the topology is re-read
        # on the next tick only then, since get('osd_map') is the costliest
        # call the tick makes.
        self._osdmap_changed = threading.Event()
        self._osdmap_changed.set()
        self._book = HistoryBook(self.history_size)

    def config_notify(self) -> None:
        for name in OPTION_NAMES:
            setattr(self, name, self.get_module_option(name))
        with self._lock:
            if self._book.size != int(self.history_size):
                self._book.resize(int(self.history_size))
        self._wake.set()

    def notify(self, notify_type: NotifyType, notify_id: str) -> None:
        if notify_type == NotifyType.osd_map:
            self._osdmap_changed.set()

    def serve(self) -> None:
        self.config_notify()
        self._wake.clear()   # config_notify wakes the loop; nothing to wake yet
        self.log.info('tiertune starting: sampling every %ss', self.sleep_interval)
        while not self._shutdown.is_set():
            try:
                self.tick()
            except Exception:
                # A bad tick must not end the loop: log it and try next time.
                self.log.exception('tiertune tick failed')
            self._wake.wait(timeout=float(self.sleep_interval))
            self._wake.clear()
        self.log.info('tiertune stopped')

    def shutdown(self) -> None:
        self._shutdown.set()
        self._wake.set()
        super().shutdown()

    def tick(self, mono: Optional[float] = None, wall: Optional[float] = None) -> None:
        """One sampling pass. mono/wall default to now (tests replay recorded times)."""
        if self._osdmap_changed.is_set():
            self._osdmap_changed.clear()
            tiers = cache_tiers(self.get('osd_map'))
        else:
            tiers = self._tiers
        samples = take_samples(self.get, tiers,
                               time.monotonic() if mono is None else mono,
                               time.time() if wall is None else wall)
        dirty = {pid: agent_levels(tiers[pid], s.counters).dirty_bytes
                 for pid, s in samples.items()}
        with self._lock:
            self._tiers = tiers
            for pid in self._book.record(samples, dirty, tiers.keys()):
                self.log.info('pool %d is no longer a cache tier; history dropped', pid)

    # ----- commands -----------------------------------------------------------
    @staticmethod
    def _check_pool(osd_map: Dict[str, Any], pool: str) -> Optional[HandleCommandResult]:
        """An error result if pool is not an existing cache pool, else None."""
        for p in osd_map.get('pools', []):
            if p['pool_name'] == pool:
                if not is_cache_pool(p):
                    return HandleCommandResult(
                        -errno.EINVAL, '',
                        f"pool '{pool}' is not a cache tier (no tier_of/cache_mode set)")
                return None
        return HandleCommandResult(-errno.ENOENT, '', f"pool '{pool}' does not exist")

    def status_rows(self, osd_map: Dict[str, Any],
                    pool: Optional[str] = None) -> List[Dict[str, Any]]:
        tiers = cache_tiers(osd_map)
        now = time.monotonic()
        with self._lock:
            return [status_row(t, self._book.get(pid), now)
                    for pid, t in sorted(tiers.items(), key=lambda kv: kv[1].pool)
                    if pool is None or t.pool == pool]

    @CLIReadCommand('tiertune status')
    def _cmd_status(self, pool: Optional[str] = None,
                    format: str = 'plain') -> HandleCommandResult:
        """Show each cache pool's tier settings, fill, dirty and agent rates"""
        bad = _bad_format(format, ('plain', 'json', 'json-pretty'))
        if bad:
            return bad
        osd_map = self.get('osd_map')
        if pool is not None:
            err = self._check_pool(osd_map, pool)
            if err:
                return err
        rows = self.status_rows(osd_map, pool)
        if format != 'plain':
            return HandleCommandResult(0, _to_json({'pools': rows}, format), '')
        if not rows:
            return HandleCommandResult(0, 'no cache tier pools\n', '')
        return HandleCommandResult(0, format_table(rows), '')

    @CLIReadCommand('tiertune dump-inputs')
    def _cmd_dump_inputs(self, format: str = 'json') -> HandleCommandResult:
        """Dump the raw mgr data a tick reads (cache pools and their base pools only)"""
        bad = _bad_format(format, ('json', 'json-pretty'))
        if bad:
            return bad
        osd_map = self.get('osd_map')
        tiers = cache_tiers(osd_map)
        keep = set(tiers) | {t.base_pool_id for t in tiers.values()}
        pool_stats = self.get('pool_stats')
        return HandleCommandResult(0, _to_json({
            'osd_map': {'epoch': osd_map.get('epoch'),
                        'pools': [p for p in osd_map.get('pools', []) if int(p['pool']) in keep]},
            'pool_stats': {'pool_stats': [e for e in pool_stats.get('pool_stats', [])
                                          if int(e['poolid']) in keep]},
        }, format), '')


def _bad_format(fmt: str, allowed: Tuple[str, ...]) -> Optional[HandleCommandResult]:
    if fmt in allowed:
        return None
    return HandleCommandResult(-errno.EINVAL, '',
                               f"unknown format '{fmt}' (one of: {', '.join(allowed)})")


def _to_json(obj: Any, fmt: str) -> str:
    if fmt == 'json-pretty':
        return json.dumps(obj, indent=4, sort_keys=True)
    return json.dumps(obj)
