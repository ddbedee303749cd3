"""`ceph tiertune status`: one row per cache pool, as a table and as JSON."""

import time
from typing import Any, Dict, List, Optional

from .bounds import as_dict
from .rates import PoolHistory
from .sampling import agent_levels
from .state import PoolState
from .topology import CacheTier
from .tuner import PoolFailure


def status_row(tier: CacheTier, hist: Optional[PoolHistory], now_mono: float,
               view: Any = None, ps: Optional[PoolState] = None,
               mode: str = 'warn', failure: Optional[PoolFailure] = None) -> Dict[str, Any]:
    row = _levels_row(tier, hist, now_mono)
    row['autotune'] = _autotune(ps, mode)
    # Set while the pool's fit or decision raises (it then has no view).
    row['error'] = (None if failure is None else
                    {'error': failure.error, 'since': failure.since_wall,
                     'ticks': failure.ticks})
    row['recommended'] = None
    row['decision'] = None
    row['model'] = None
    if view is not None and mode != 'off':
        # (A view from before a `mode <pool> off` stays until the next
        # tick: off shows no decision, as the doc says.)
        d = view.decision
        row['recommended'] = d.recommended.as_dict()
        row['decision'] = {'action': d.action, 'next': d.next.as_dict(),
                           'reasons': list(d.reasons), 'bounds_block': d.bounds_block}
        m = view.model.as_dict()
        row['model'] = {k: m.get(k) for k in ('fitted', 'why_not', 'inflow', 'predictions',
                                              'promote')}
    if ps is not None and ps.manual_change:
        row['autotune']['manual_change'] = with_resume(ps.manual_change, tier.pool)
    return row


def with_resume(note: str, pool: str) -> str:
    """A manual-change note with the command that resumes tuning, under
    the pool's name now (stored with the note, it named the pool as it
    was before a rename: a review helper).  Notes stored before this
    version carry it already."""
    return note if '` resumes' in note else f'{note}: `ceph tiertune mode {pool} on` resumes'


def _autotune(ps: Optional[PoolState], mode: str) -> Dict[str, Any]:
    if ps is None:
        return {'mode': mode}
    return {'mode': mode, 'pool_mode': ps.mode, 'bounds': as_dict(ps.bounds),
            'knobs': as_dict(ps.knobs),
            'baseline': ps.baseline.as_dict() if ps.baseline else None,
            'last_applied': ps.last_applied.as_dict() if ps.last_applied else None,
            'last_change_time': ps.last_change_wall, 'manual_change': ps.manual_change}


def _levels_row(tier: CacheTier, hist: Optional[PoolHistory], now_mono: float) -> Dict[str, Any]:
    row: Dict[str, Any] = {
        'pool': tier.pool,
        'pool_id': tier.pool_id,
        'base_pool': tier.base_pool,
        'base_pool_id': tier.base_pool_id,
        'cache_mode': tier.cache_mode,
        'pg_num': tier.pg_num,
        # PGs a split left with invalid stats (the agent idles on them), as
        # last read; 0 when tiertune is not reading them (see splits).
        'invalid_stats_pgs': tier.invalid_stats_pgs,
        'agent_stopped': tier.agent_stopped or None,
        'agent_limited': tier.agent_limited or None,
        'osds_filling': tier.osds_filling or None,
        'target_max_bytes': tier.target_max_bytes,
        'target_max_objects': tier.target_max_objects,
        'ratios': tier.ratios.as_dict(),
        'hit_set': tier.hit_set.as_dict(),
        'promote': {'min_read_recency': tier.min_read_recency_for_promote,
                    'min_write_recency': tier.min_write_recency_for_promote},
        'min_flush_age_s': tier.min_flush_age_s,
        'min_evict_age_s': tier.min_evict_age_s,
        'samples': len(hist) if hist else 0,
        'sample_age_s': None,
        'sample_time': None,
        'fill': None,
        'dirty': None,
        'objects': None,
        'bytes': None,
        'agent_pgs': None,
        'rates': None,
        'counters': None,
    }
    latest = hist.latest if hist else None
    if latest is None:
        return row
    s, c = latest.sample, latest.sample.counters
    lv = agent_levels(tier, c)
    row.update({
        'sample_age_s': round(max(now_mono - s.mono, 0.0), 1),
        'sample_time': s.wall,
        'fill': _round(lv.fill),
        'dirty': _round(lv.dirty),
        'objects': {'user': lv.user_objects, 'dirty': lv.dirty_objects,
                    'hit_set_archive': c.num_objects_hit_set_archive},
        'bytes': {'user': lv.user_bytes, 'dirty': lv.dirty_bytes,
                  'hit_set_archive': c.num_bytes_hit_set_archive},
        'agent_pgs': {'pg_num': s.num_pg,
                      'flush_high': c.num_flush_mode_high, 'flush_low': c.num_flush_mode_low,
                      'evict_some': c.num_evict_mode_some, 'evict_full': c.num_evict_mode_full},
        'rates': latest.rates.as_dict() if latest.rates else None,
        'counters': {'num_promote': c.num_promote, 'num_flush': c.num_flush,
                     'num_flush_kb': c.num_flush_kb, 'num_evict': c.num_evict,
                     'num_evict_kb': c.num_evict_kb},
    })
    return row


# Fill and dirty to the mon's ratio grid (a micro): the plain table's
# percentages are formatted from these, and from 4 places they were
# rounded twice (0.695513 showed as 69.5%).
LEVEL_PLACES = 6


def _round(v: Optional[float]) -> Optional[float]:
    return None if v is None else round(v, LEVEL_PLACES)


def fmt_bytes(n: Optional[float]) -> str:
    if n is None:
        return '-'
    units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
    v = float(n)
    for unit in units:
        if abs(v) < 1024 or unit == units[-1]:
            return f'{v:.0f} {unit}' if unit == 'B' else f'{v:.1f} {unit}'
        v /= 1024
    return f'{v:.1f} PiB'  # not reached


def fmt_wall(t: float) -> str:
    """A wall-clock time (seconds since the epoch) as the mgr host's local
    time, with its offset from UTC: the operator's CLI is often on another
    host, in another zone (a review helper)."""
    return time.strftime('%Y-%m-%d %H:%M:%S %z', time.localtime(t))


def fmt_pct(v: Optional[float]) -> str:
    return '-' if v is None else f'{v * 100:.1f}%'


def fmt_rate(v: Optional[float], unit: str = '/s') -> str:
    return '-' if v is None else f'{v:.1f}{unit}'


COLUMNS = ['POOL', 'BASE', 'MODE', 'TARGET', 'FILL', 'DIRTY', 'RATIOS D/H/F', 'AUTOTUNE',
           'NEW D/H/F', 'ACTION',
           'FLUSH', 'EVICT', 'PROMOTE', 'RD CACHE/BASE', 'WR CACHE/BASE',
           'AGENT PGS HI/LO/SOME/FULL', 'HIT SET', 'AGE']


def _cache_base(rates: Dict[str, Any], op: str) -> str:
    """Client IO served by the cache / proxied to the base, per second."""
    if not rates:
        return '-'
    cache = fmt_bytes(rates.get(f'{op}_bytes_sec'))
    proxied = rates.get(f'proxied_{op}_bytes_sec')
    # A negative interval value is reporting skew between OSDs (see Rates).
    base = fmt_bytes(None if proxied is None else max(proxied, 0.0))
    return f'{cache}/s / {base}/s' if proxied is not None else f'{cache}/s / -'


def _action_cell(row: Dict[str, Any]) -> str:
    """The last tick's decision: a NEW D/H/F unlike the ratios may be a
    step under way, held (a hold reason, the rate limit) or only warned
    of, and only the JSON said which (a review helper)."""
    d = row.get('decision')
    if not d:
        return '-'
    if d['action'] == 'change' and row.get('autotune', {}).get('mode') != 'on':
        return 'would change'
    return str(d['action'])


def _hit_set_cell(hs: Dict[str, Any]) -> str:
    """type, count x period; 'none (...)' when the PGs keep none (a count
    or period of 0 disables them whatever the type: HitSetSettings.active)."""
    cell = f'{hs["type"]} {hs["count"]}x{hs["period_s"]}s'
    if hs['type'] in ('', 'none'):
        return 'none'
    return cell if hs['count'] > 0 and hs['period_s'] > 0 else f'none ({cell})'


def _table_cells(row: Dict[str, Any]) -> List[str]:
    r = row['ratios']
    rates = row['rates'] or {}
    pgs = row['agent_pgs']
    hs = row['hit_set']
    targets = []
    if row['target_max_bytes']:
        targets.append(fmt_bytes(row['target_max_bytes']))
    if row['target_max_objects']:
        targets.append(f'{row["target_max_objects"]} obj')
    target = ' / '.join(targets) or 'none'
    return [
        row['pool'], row['base_pool'], row['cache_mode'], target,
        fmt_pct(row['fill']), fmt_pct(row['dirty']),
        _dhf(r), row.get('autotune', {}).get('mode', '-'),
        _dhf(row['recommended']) if row.get('recommended') else '-',
        _action_cell(row),
        fmt_bytes(rates.get('flush_bytes_sec')) + '/s' if rates else '-',
        fmt_bytes(rates.get('evict_bytes_sec')) + '/s' if rates else '-',
        fmt_rate(rates.get('promote_ops_sec'), ' op/s') if rates else '-',
        _cache_base(rates, 'read'),
        _cache_base(rates, 'write'),
        (f'{pgs["flush_high"]}/{pgs["flush_low"]}/{pgs["evict_some"]}/{pgs["evict_full"]}'
         f' of {pgs["pg_num"]}') if pgs else '-',
        _hit_set_cell(hs),
        '-' if row['sample_age_s'] is None else f'{row["sample_age_s"]:.0f}s',
    ]


def note_lines(rows: List[Dict[str, Any]]) -> str:
    """Lines under the table: each pool tiertune could not fit or decide,
    and each it stopped tuning because its ratios were changed by hand
    (the AUTOTUNE column says only `warn`, as for a pool set to warn)."""
    lines = []
    for r in rows:
        e = r.get('error')
        if e:
            lines.append(f'pool {r["pool"]}: not fitted or decided, {e["ticks"]} tick(s) since '
                         f'{fmt_wall(e["since"])}: {e["error"]} (see the mgr log)\n')
        autotune = r.get('autotune') or {}
        manual = autotune.get('manual_change')
        if manual and autotune.get('mode') == 'warn':    # not once set off since
            lines.append(f'pool {r["pool"]}: {manual}\n')
    return ''.join(lines)


def _dhf(r: Dict[str, float]) -> str:
    return f'{r["dirty"]:.2f}/{r["dirty_high"]:.2f}/{r["full"]:.2f}'


def format_history(records: List[Dict[str, Any]]) -> str:
    if not records:
        return 'no decisions yet\n'
    lines = []
    for r in records:
        lines.append(f'{fmt_wall(r["time"])}  {r["pool"]}  {_dhf(r["old"])} -> {_dhf(r["new"])}  '
                     f'{r["result"]}: {r["reason"]}')
    return '\n'.join(lines) + '\n'


def format_table(rows: List[Dict[str, Any]]) -> str:
    """Aligned, borderless, left-justified: the look of `osd pool autoscale-status`."""
    cells = [COLUMNS] + [_table_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return '\n'.join('  '.join(v.ljust(w) for v, w in zip(line, widths)).rstrip()
                     for line in cells) + '\n'
