"""Cache-tier topology and settings, read from the OSD map's pool entries."""

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

MICRO = 1_000_000
POOL_TYPE_ERASURE = 3  # pg_pool_t::TYPE_ERASURE


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class Ratios:
    dirty: float
    dirty_high: float
    full: float

    def as_dict(self) -> Dict[str, float]:
        return {'dirty': self.dirty, 'dirty_high': self.dirty_high, 'full': self.full}


@dataclass(frozen=True)
class HitSetSettings:
    type: str
    period_s: int
    count: int
    fpp: Optional[float]
    search_last_n: int
    grade_decay_rate: int

    @property
    def active(self) -> bool:
        """Whether the PGs keep hit sets at all (PrimaryLogPG::hit_set_setup:
        a type, a count and a period)."""
        return self.type not in ('', 'none') and self.count > 0 and self.period_s > 0

    def as_dict(self) -> Dict[str, Any]:
        return {'type': self.type, 'period_s': self.period_s, 'count': self.count,
                'fpp': self.fpp, 'search_last_n': self.search_last_n,
                'grade_decay_rate': self.grade_decay_rate}


@dataclass(frozen=True)
class CacheTier:
    """One cache pool as the OSD map describes it."""
    pool_id: int
    pool: str
    base_pool_id: int
    base_pool: str
    base_is_erasure: bool
    cache_mode: str
    pg_num: int
    target_max_bytes: int
    target_max_objects: int
    ratios: Ratios
    hit_set: HitSetSettings
    min_read_recency_for_promote: int
    min_write_recency_for_promote: int
    min_flush_age_s: int
    min_evict_age_s: int
    last_change: int
    crush_rule: int = -1
    # The base sends clients to this tier (`osd tier set-overlay`: its
    # read_tier/write_tier).  Without it clients go straight to the base,
    # or to another of its tiers (overlay_pool, '' for none), and this tier
    # only drains what it holds.
    overlay: bool = True
    overlay_pool: str = ''
    # The base's other cache tiers (a migration from one tier to another):
    # their flushes and promotions land in the base's counters too, which
    # this tier's cannot tell from its own proxied IO (see sampling).
    other_tiers: Tuple[str, ...] = ()
    # What the pool's PG count is moving to (pg_num_target and the
    # placement count, pgp_num, with its target; pg_num_pending is a merge
    # about to happen).  The mgr moves pg_num and pgp_num a step at a time:
    # they differ from their targets while PGs split, merge or move.
    pg_num_target: int = 0
    pg_num_pending: int = 0
    pgp_num: int = 0
    pgp_num_target: int = 0
    # The base pool's `full` flag (its quota reached, or an OSD it maps to
    # full): it takes neither the agent's flushes nor, with the overlay,
    # client writes (the client's Objecter pauses writes by the pool they
    # are addressed to, the base).  The cache pool's own is no hold:
    # lower ratios make its agent evict, which frees it.
    base_full: bool = False
    # PGs whose stats a split left invalid, as the module last read them
    # (splits.SplitWatch; not in the OSD map).
    invalid_stats_pgs: int = 0
    # Why the tier agent of the pool's OSDs does nothing ('' when it runs):
    # both its op limits at 0 in the mon's config database; or why it runs
    # only on one side of dirty_high (one of them at 0).  See agent_config.
    agent_stopped: str = ''
    agent_limited: str = ''
    # The OSDs of the pool's CRUSH rule the mon marks nearfull, backfillfull
    # or full, in words ('' for none): a higher full ratio (or dirty ratio,
    # which keeps data from being evicted) would fill them further.
    osds_filling: str = ''

    @property
    def pg_change(self) -> Optional[str]:
        """The PG count change in progress, in words; None when there is none."""
        n = self.pg_num
        if (self.pg_num_target in (0, n) and self.pg_num_pending in (0, n)
                and self.pgp_num_target in (0, self.pgp_num)):
            # At rest, as nearly always: asked for every pool every tick
            # (hold_reasons), where the words below cost a microsecond.
            return None
        moves = [f'{what} {now} -> {to}' for what, now, to in (
            ('pg_num', self.pg_num, self.pg_num_target),
            ('pg_num_pending', self.pg_num, self.pg_num_pending),
            ('pgp_num', self.pgp_num, self.pgp_num_target)) if to and now != to]
        return ', '.join(dict.fromkeys(moves)) or None

    @property
    def clients_go(self) -> str:
        """Where the base sends its clients, when not to this tier."""
        return (f'to tier {self.overlay_pool}' if self.overlay_pool
                else 'straight to the base')

    @property
    def takes_client_writes(self) -> bool:
        """Whether clients' writes land in this tier: through the overlay,
        in a mode that keeps them."""
        return self.overlay and self.cache_mode in WRITE_CACHE_MODES

    @property
    def has_target(self) -> bool:
        # Without either target the OSD agent never flushes or evicts.
        return self.target_max_bytes > 0 or self.target_max_objects > 0


# The cache modes whose tier takes client writes (readforward is
# readproxy from Luminous on); proxy and forward send them to the base,
# readonly redirects them there.
WRITE_CACHE_MODES = ('writeback', 'readproxy', 'readforward')

# The CacheTier fields a tick sets from outside the OSD map (splits,
# agent_config, the OSD states): what commands carry from the last tick.
TICK_FIELDS = ('invalid_stats_pgs', 'agent_stopped', 'agent_limited', 'osds_filling')


def with_fields(t: CacheTier, **fields: Any) -> CacheTier:
    """t with fields set from outside the OSD map (splits, agent_config):
    t itself when it has them already, as SeriesCache follows a tier by
    identity."""
    if all(getattr(t, k) == v for k, v in fields.items()):
        return t
    return dataclasses.replace(t, **fields)


def _ratio_field(p: Mapping[str, Any], key: str) -> float:
    return int(p.get(key, 0)) / MICRO


def _hit_set(p: Mapping[str, Any]) -> HitSetSettings:
    params = p.get('hit_set_params') or {}
    fpp = params.get('false_positive_probability')
    return HitSetSettings(
        type=str(params.get('type', 'none')),
        period_s=int(p.get('hit_set_period', 0)),
        count=int(p.get('hit_set_count', 0)),
        fpp=float(fpp) if fpp is not None else None,
        search_last_n=int(p.get('hit_set_search_last_n', 0)),
        grade_decay_rate=int(p.get('hit_set_grade_decay_rate', 0)),
    )


def _full(p: Mapping[str, Any]) -> bool:
    return 'full' in str(p.get('flags_names', '')).split(',')


def is_cache_pool(p: Mapping[str, Any]) -> bool:
    return int(p.get('tier_of', -1)) >= 0 and p.get('cache_mode', 'none') != 'none'


def cache_tiers(osd_map: Mapping[str, Any]) -> Dict[int, CacheTier]:
    """All cache pools (tier_of set, cache_mode not none), by pool id."""
    pools: List[Mapping[str, Any]] = osd_map.get('pools', [])
    names = {int(p['pool']): str(p['pool_name']) for p in pools}
    # Per pool, the tiers it sends clients to (read, write), -1 for none.
    overlays = {int(p['pool']): (int(p.get('read_tier', -1)), int(p.get('write_tier', -1)))
                for p in pools}
    erasure = {int(p['pool']) for p in pools if int(p.get('type', 1)) == POOL_TYPE_ERASURE}
    full = {int(p['pool']) for p in pools if _full(p)}
    tiers_of: Dict[int, List[str]] = {}
    for p in pools:
        if is_cache_pool(p):
            tiers_of.setdefault(int(p['tier_of']), []).append(str(p['pool_name']))
    tiers: Dict[int, CacheTier] = {}
    for p in pools:
        if not is_cache_pool(p):
            continue
        pid, base_id = int(p['pool']), int(p['tier_of'])
        tiers[pid] = CacheTier(
            pool_id=pid,
            pool=str(p['pool_name']),
            base_pool_id=base_id,
            base_pool=names.get(base_id, str(base_id)),
            base_is_erasure=base_id in erasure,
            cache_mode=str(p['cache_mode']),
            pg_num=int(p.get('pg_num', 0)),
            target_max_bytes=int(p.get('target_max_bytes', 0)),
            target_max_objects=int(p.get('target_max_objects', 0)),
            ratios=Ratios(dirty=_ratio_field(p, 'cache_target_dirty_ratio_micro'),
                          dirty_high=_ratio_field(p, 'cache_target_dirty_high_ratio_micro'),
                          full=_ratio_field(p, 'cache_target_full_ratio_micro')),
            hit_set=_hit_set(p),
            min_read_recency_for_promote=int(p.get('min_read_recency_for_promote', 0)),
            min_write_recency_for_promote=int(p.get('min_write_recency_for_promote', 0)),
            min_flush_age_s=int(p.get('cache_min_flush_age', 0)),
            min_evict_age_s=int(p.get('cache_min_evict_age', 0)),
            last_change=int(p.get('last_change', 0)),
            crush_rule=int(p.get('crush_rule', -1)),
            overlay=pid in overlays.get(base_id, (pid, pid)),
            overlay_pool=names.get(overlays.get(base_id, (-1, -1))[0], ''),
            other_tiers=tuple(sorted(n for n in tiers_of[base_id] if n != p['pool_name'])),
            pg_num_target=int(p.get('pg_num_target', 0)),
            pg_num_pending=int(p.get('pg_num_pending', 0)),
            pgp_num=int(p.get('pg_placement_num', 0)),
            pgp_num_target=int(p.get('pg_placement_num_target', 0)),
            base_full=base_id in full,
        )
    return tiers


def cluster_flags(osd_map: Mapping[str, Any]) -> FrozenSet[str]:
    """The OSD map's flags (e.g. notieragent, which stops every tier agent)."""
    return frozenset(f for f in str(osd_map.get('flags', '')).split(',') if f)


def rule_osd_ids(crush: Mapping[str, Any], rule_id: int) -> Optional[List[int]]:
    """The OSDs a CRUSH rule can place data on, ascending: those under its
    first `take` (a device-class rule takes a shadow root such as
    default~ssd).  From one CRUSHMap.dump(); None if the rule or its root
    is not there."""
    rule = next((r for r in crush.get('rules', []) if r.get('rule_id') == rule_id), None)
    if rule is None:
        return None
    take = next((s for s in rule.get('steps', []) if s.get('op') == 'take'), None)
    if take is None:
        return None
    buckets = {b['id']: b for b in crush.get('buckets', [])}
    if take['item'] >= 0:
        return [int(take['item'])]
    seen: set = set()
    todo = [take['item']]
    while todo:
        b = buckets.get(todo.pop())
        if b is None:
            continue
        for item in b.get('items', []):
            if item['id'] >= 0:
                seen.add(item['id'])
            else:
                todo.append(item['id'])
    return sorted(seen) if seen or take['item'] in buckets else None


# An OSD's fullness states in the OSD map (ceph_osd_state_name), worst first.
OSD_FULLNESS = ('full', 'backfillfull', 'nearfull')


def filling_osds(osd_map: Mapping[str, Any]) -> Dict[int, str]:
    """The OSDs the mon marks nearfull, backfillfull or full, each with its
    worst such state."""
    out: Dict[int, str] = {}
    for o in osd_map.get('osds', []):
        states = o.get('state') or ()
        worst = next((f for f in OSD_FULLNESS if f in states), None)
        if worst is not None:
            out[int(o['osd'])] = worst
    return out


def osds_filling_text(filling: Mapping[int, str], rule_ids: Optional[Sequence[int]]) -> str:
    """In words, those of filling on the rule's OSDs (rule_ids; None when
    the rule could not be read: all of them count)."""
    ids = sorted(filling if rule_ids is None else set(filling).intersection(rule_ids))
    return ', '.join(f'osd.{i} {filling[i]}' for i in ids)


def up_in_osd_ids(osd_map: Mapping[str, Any]) -> Set[int]:
    """The OSDs that are up and in: those that can be a PG's primary."""
    return {int(o['osd']) for o in osd_map.get('osds', []) if o.get('up') and o.get('in')}


def pool_ids_by_name(osd_map: Mapping[str, Any]) -> Dict[str, int]:
    return {str(p['pool_name']): int(p['pool']) for p in osd_map.get('pools', [])}
