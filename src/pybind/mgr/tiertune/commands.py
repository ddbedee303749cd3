"""`ceph tiertune ...`: the operator's commands, as a mixin of the Module.

Every command takes --format (plain|json|json-pretty), answers bad input
with EINVAL (unknown pool: ENOENT) and changes nothing unless all of its
input is valid.
"""

import errno
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple, Union

from mgr_module import CLIReadCommand, CLIWriteCommand, HandleCommandResult

from .bounds import as_typed, with_setting
from .report import format_history, format_table, note_lines, status_row
from .splits import SPLIT_FIELDS, SPLIT_SOURCE, pg_pool_id
from .state import FOLLOW_DEFAULT, MODES
from .tick_cost import tick_line
from .topology import (
    TICK_FIELDS,
    CacheTier,
    cache_tiers,
    cluster_flags,
    is_cache_pool,
    pool_ids_by_name,
    with_fields,
)

if TYPE_CHECKING:
    import threading

    from .models import PromoteLimits
    from .rates import HistoryBook
    from .tick_cost import TickCosts
    from .tuner import Effects, Tuner

FORMATS = ('plain', 'json', 'json-pretty')


def bad_format(fmt: str, allowed: Tuple[str, ...] = FORMATS) -> Optional[HandleCommandResult]:
    if fmt in allowed:
        return None
    return HandleCommandResult(-errno.EINVAL, '',
                               f"unknown format '{fmt}' (one of: {', '.join(allowed)})")


def to_json(obj: Any, fmt: str) -> str:
    if fmt == 'json-pretty':
        return json.dumps(obj, indent=4, sort_keys=True)
    return json.dumps(obj)


def check_pool(osd_map: Dict[str, Any], pool: str) -> Optional[HandleCommandResult]:
    """An error result if pool is not an existing cache pool, else None."""
    for p in osd_map.get('pools', []):
        if p['pool_name'] == pool:
            if not is_cache_pool(p):
                return HandleCommandResult(
                    -errno.EINVAL, '',
                    f"pool '{pool}' is not a cache tier (no tier_of/cache_mode set)")
            return None
    return HandleCommandResult(-errno.ENOENT, '', f"pool '{pool}' does not exist")


class Commands:
    """Mixed into Module; `self` is the Module."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _changing: Set[int]
        _wake: threading.Event
        _tuner: Tuner
        _book: HistoryBook
        _tick_costs: TickCosts
        _limits: Dict[int, PromoteLimits]
        _tiers: Dict[int, CacheTier]
        sleep_interval: int
        log: logging.Logger

        def get(self, data_name: str) -> Any: ...
        def _save_settings_locked(self) -> None: ...
        def _ensure_loaded(self) -> None: ...
        def _effects(self) -> Effects: ...

    def _pool_arg(self, pool: str, fmt: str) -> Union[CacheTier, HandleCommandResult]:
        """The cache tier named by a command's pool argument, or the error
        result to return (bad format first, then unknown or not a cache pool)."""
        found = self._pool_and_map(pool, fmt)
        return found if isinstance(found, HandleCommandResult) else found[0]

    def _pool_and_map(self, pool: str, fmt: str
                      ) -> Union[Tuple[CacheTier, Dict[str, Any]], HandleCommandResult]:
        """_pool_arg's tier, and the OSD map it was read from."""
        bad = bad_format(fmt)
        if bad:
            return bad
        osd_map = self.get('osd_map')
        err = check_pool(osd_map, pool)
        if err:
            return err
        (tier,) = [t for t in self._cache_tiers(osd_map).values() if t.pool == pool]
        return tier, osd_map

    def _cache_tiers(self, osd_map: Dict[str, Any]) -> Dict[int, CacheTier]:
        """The OSD map's cache tiers, with their PGs' invalid stats, agent
        op limits and filling OSDs as the last tick had them: status shows
        what its decision was made on."""
        with self._lock:
            kept = {pid: {k: getattr(t, k) for k in TICK_FIELDS}
                    for pid, t in self._tiers.items()}
        # A pool the tick has not seen keeps CacheTier's defaults.
        return {pid: with_fields(t, **kept.get(pid, {}))
                for pid, t in cache_tiers(osd_map).items()}

    def _reply(self, obj: Any, fmt: str, plain: str) -> HandleCommandResult:
        if fmt == 'plain':
            return HandleCommandResult(0, plain, '')
        return HandleCommandResult(0, to_json(obj, fmt), '')

    @CLIReadCommand('tiertune status')
    def _cmd_status(self, pool: Optional[str] = None,
                    format: str = 'plain') -> HandleCommandResult:
        """Show each cache pool: tier settings, fill, dirty, rates, mode, bounds,
        recommendation"""
        bad = bad_format(format)
        if bad:
            return bad
        self._ensure_loaded()
        osd_map = self.get('osd_map')
        if pool is not None:
            err = check_pool(osd_map, pool)
            if err:
                return err
        rows = self.status_rows(osd_map, pool)
        with self._lock:
            tick = self._tick_costs.summary()
        if format != 'plain':
            return HandleCommandResult(0, to_json({'mode': self._settings_mode(), 'pools': rows,
                                                   'tick': tick}, format), '')
        if not rows:
            return HandleCommandResult(0, 'no cache tier pools\n', '')
        return HandleCommandResult(0, format_table(rows) + note_lines(rows) + tick_line(tick)
                                   + '\n', '')

    def status_rows(self, osd_map: Dict[str, Any],
                    pool: Optional[str] = None) -> List[Dict[str, Any]]:
        tiers = self._cache_tiers(osd_map)
        now = time.monotonic()
        with self._lock:
            return [status_row(t, self._book.get(pid), now, self._tuner.views.get(pid),
                               self._tuner.settings.pool(pid),
                               self._tuner.settings.effective_mode(pid),
                               self._tuner.failures.get(pid))
                    for pid, t in sorted(tiers.items(), key=lambda kv: kv[1].pool)
                    if pool is None or t.pool == pool]

    def _settings_mode(self) -> str:
        with self._lock:
            return self._tuner.settings.mode

    @CLIWriteCommand('tiertune mode')
    def _cmd_mode(self, pool_or_mode: str, mode: Optional[str] = None,
                  format: str = 'plain') -> HandleCommandResult:
        """Set tiertune's mode (off|warn|on): `mode <mode>` sets the default,
        `mode <pool> <mode>` one pool's (`default`: follow the default again)"""
        bad = bad_format(format)
        if bad:
            return bad
        pool = pool_or_mode if mode is not None else None
        new = mode if mode is not None else pool_or_mode
        allowed = MODES + ((FOLLOW_DEFAULT,) if pool is not None else ())
        if new not in allowed:
            return HandleCommandResult(-errno.EINVAL, '',
                                       f"unknown mode '{new}' (one of: {', '.join(allowed)})")
        tier = None
        if pool is not None:
            found = self._pool_arg(pool, format)
            if isinstance(found, HandleCommandResult):
                return found
            tier = found
        self._ensure_loaded()
        with self._lock:
            s = self._tuner.settings
            if tier is None:
                s.mode = new
                taken = [ps for ps in s.pools.values() if ps.mode is None]
                t = self._tuner
                t.forget_refusals(
                    [pid for pid in {*t.refusals, *t.retry_after}
                     if pid not in s.pools or s.pools[pid].mode is None])
            else:
                ps = s.pool(tier.pool_id)
                ps.mode = None if new == FOLLOW_DEFAULT else new
                taken = [ps]
                self._tuner.forget_refusals([tier.pool_id])
            for ps in taken:
                if s.effective_mode_of(ps) == 'on':
                    # Whatever the pool has now, set by tiertune or by hand
                    # while it was not `on`, is where tiertune goes on from:
                    # not a hand change to respect (tuner.Tuner._adopt).
                    ps.manual_change = None
                    ps.last_applied = None
                    ps.planned = None   # a change cut short before: the same
            self._save_settings_locked()
            effective = s.effective_mode_of(taken[0]) if tier else new
        own = self._own_modes() if tier is None else []
        self._wake.set()
        if tier is None:
            plain = f'default mode is now {new}\n'
            if own:
                plain += (f'pools with a mode of their own, which keep it: '
                          f'{", ".join(f"{p} ({m})" for p, m in own)} (`ceph tiertune mode '
                          f'<pool> {FOLLOW_DEFAULT}` makes one follow the default)\n')
            return self._reply({'pool': None, 'mode': new,
                                'pools_with_own_mode': [{'pool': p, 'mode': m} for p, m in own]},
                               format, plain)
        plain = (f'pool {pool} mode is now {new}\n' if new != FOLLOW_DEFAULT else
                 f'pool {pool} follows the default mode ({effective})\n')
        return self._reply({'pool': pool, 'mode': effective,
                            'pool_mode': None if new == FOLLOW_DEFAULT else new},
                           format, plain)

    def _own_modes(self) -> List[Tuple[str, str]]:
        """(pool, mode) of the cache pools with a mode of their own (the
        same as the default or not: they keep it when the default changes)."""
        names = {pid: t.pool for pid, t in cache_tiers(self.get('osd_map')).items()}
        with self._lock:
            pools = list(self._tuner.settings.pools.items())
        return sorted((names[pid], ps.mode) for pid, ps in pools
                      if ps.mode is not None and pid in names)

    @CLIWriteCommand('tiertune set')
    def _cmd_set(self, pool: str, key: str, value: float,
                 format: str = 'plain') -> HandleCommandResult:
        """Set a pool's bound (dirty_ratio_min/max, dirty_high_ratio_min/max,
        full_ratio_min/max) or knob (horizon_s, min_interval_s, max_step, deadband)"""
        tier = self._pool_arg(pool, format)
        if isinstance(tier, HandleCommandResult):
            return tier
        value = as_typed(value)
        self._ensure_loaded()
        with self._lock:
            ps = self._tuner.settings.pool(tier.pool_id)
            bounds, knobs, problem = with_setting(ps.bounds, ps.knobs, key, value)
            if problem:
                return HandleCommandResult(-errno.EINVAL, '',
                                           f'{pool}: {key}={value} refused: {problem}')
            ps.bounds, ps.knobs = bounds, knobs
            self._save_settings_locked()
            out = {'pool': pool, 'bounds': dict(bounds.__dict__), 'knobs': dict(knobs.__dict__)}
        self._wake.set()
        return self._reply(out, format, f'{pool}: {key} = {value}\n')

    @CLIReadCommand('tiertune eval')
    def _cmd_eval(self, pool: str, format: str = 'plain') -> HandleCommandResult:
        """The decision the controller would make now for a pool, and the numbers behind it"""
        found = self._pool_and_map(pool, format)
        if isinstance(found, HandleCommandResult):
            return found
        tier, osd_map = found
        self._ensure_loaded()
        with self._lock:
            if self._book.get(tier.pool_id) is None:
                return HandleCommandResult(-errno.EAGAIN, '',
                                           f'{pool}: not evaluated yet (no tick since it became '
                                           f'a cache tier); try again in a moment')
            # Decided now, on the OSD map just read and the samples held: a
            # target, a ratio or a bound set since the last tick shows at once.
            try:
                view = self._tuner.evaluate(tier.pool_id, tier, self._book,
                                            sorted(cluster_flags(osd_map)), self._limits,
                                            float(self.sleep_interval), time.monotonic(),
                                            time.time())
                out: Dict[str, Any] = {'pool': pool, 'mode': view.mode,
                                       'decision': view.decision.as_dict(),
                                       'model': view.model.as_dict()}
            except Exception as e:
                # As the tick leaves such a pool out (TIERTUNE_POOL_FAILED).
                self.log.exception('tiertune eval %s', pool)
                return HandleCommandResult(-errno.EIO, '',
                                           f'{pool}: could not be fitted or decided: '
                                           f'{type(e).__name__}: {e} (the mgr log has the '
                                           f'traceback)')
        d: Dict[str, Any] = out['decision']
        lines = [f'pool {pool} (mode {out["mode"]}): {d["action"]}',
                 f'  current     {_r(d["current"])}',
                 f'  recommended {_r(d["recommended"])}',
                 f'  next        {_r(d["next"])}']
        lines += [f'  - {r}' for r in d.get('reasons', [])]
        if d.get('bounds_block'):
            lines.append(f'  bounds block: {d["bounds_block"]}')
        return self._reply(out, format, '\n'.join(lines) + '\n')

    @CLIReadCommand('tiertune history')
    def _cmd_history(self, pool: Optional[str] = None,
                     format: str = 'plain') -> HandleCommandResult:
        """The last decisions tiertune acted on: time, old -> new ratios, reason, result"""
        bad = bad_format(format)
        if bad:
            return bad
        pid = None
        self._ensure_loaded()
        if pool is not None:
            tier = self._pool_arg(pool, format)
            if isinstance(tier, HandleCommandResult):
                # A pool that is no longer a tier (cache mode none, the
                # tier removed) keeps its decisions: they are still asked for.
                pid = pool_ids_by_name(self.get('osd_map')).get(pool)
                with self._lock:
                    if pid is None or pid not in self._tuner.histories:
                        return tier
            else:
                pid = tier.pool_id
        with self._lock:
            records = sorted((r for p, h in self._tuner.histories.items()
                              if pid is None or p == pid for r in h), key=lambda r: r.time)
            out = [r.to_dict() for r in records]
        return self._reply({'history': out}, format, format_history(out))

    @CLIWriteCommand('tiertune reset')
    def _cmd_reset(self, pool: str, format: str = 'plain') -> HandleCommandResult:
        """Restore the ratios a pool had when tiertune first took control of it,
        and set the pool to warn"""
        self._ensure_loaded()
        with self._lock:
            # The map read under the lock: a tick changing the pool's ratios
            # meanwhile has finished (Tuner.reset handles a map that has
            # not caught up with that change yet).
            tier = self._pool_arg(pool, format)
            if isinstance(tier, HandleCommandResult):
                return tier
            if tier.pool_id in self._changing:
                # The tick's `osd pool set`s run without the lock: waiting
                # for them here would hold up every module's commands.
                return HandleCommandResult(-errno.EBUSY, '',
                                           f'{pool}: tiertune is changing its ratios right now; '
                                           f'try again in a moment')
            rc, msg = self._tuner.reset(tier.pool_id, tier, self._effects(), time.time(),
                                        time.monotonic())
        if rc:
            return HandleCommandResult(rc, '', msg)
        self._wake.set()
        return self._reply({'pool': pool, 'result': msg}, format, msg + '\n')

    @CLIReadCommand('tiertune dump-inputs')
    def _cmd_dump_inputs(self, format: str = 'json') -> HandleCommandResult:
        """Dump the raw mgr data a tick reads (cache pools and their base pools only)"""
        bad = bad_format(format, ('json', 'json-pretty'))
        if bad:
            return bad
        osd_map = self.get('osd_map')
        tiers = cache_tiers(osd_map)
        keep = set(tiers) | {t.base_pool_id for t in tiers.values()}
        pool_stats = self.get('pool_stats')
        return HandleCommandResult(0, to_json({
            'osd_map': {'epoch': osd_map.get('epoch'), 'flags': osd_map.get('flags', ''),
                        'pools': [p for p in osd_map.get('pools', []) if int(p['pool']) in keep]},
            'pool_stats': {'pool_stats': [e for e in pool_stats.get('pool_stats', [])
                                          if int(e['poolid']) in keep]},
            'pg_ready': self.get('pg_ready'),
            # What the split watch reads of the cache pools' PGs (splits).
            SPLIT_SOURCE: {'pg_stats': [
                {k: pg.get(k) for k in SPLIT_FIELDS}
                for pg in self.get(SPLIT_SOURCE).get('pg_stats', [])
                if pg_pool_id(pg) in tiers]},
        }, format), '')


def _r(d: Dict[str, float]) -> str:
    return f'{d["dirty"]:.3f}/{d["dirty_high"]:.3f}/{d["full"]:.3f}'



