"""One tick's view of every cache pool: cumulative counters and agent modes.

Reads only O(pools) mgr data: `pool_stats` every tick, and `osd_map` when the
caller says the topology may have changed (and the module asks `pg_ready`,
one flag, until the mgr's PG stats are complete).  Never `pg_dump`, `pg_stats` or
`pg_summary`: those are O(PGs) and all mgr modules share one GIL.
"""

import operator
from dataclasses import dataclass, fields
from typing import Any, Callable, Collection, Dict, Mapping, Optional, Tuple

from .topology import CacheTier

Getter = Callable[[str], Any]

# The mgr data a steady tick may read.  A unit test holds the module to
# this list.  The one per-PG source, get('pg_stats'), is read only for a
# tier first seen or after a PG count change (splits.SPLIT_SOURCE).
TICK_SOURCES = ('osd_map', 'pool_stats', 'pg_ready')

# BlueStore's estimate_objects_overhead(): the agent adds it to the user bytes
# before comparing with the PG's share of target_max_bytes.  Production cache
# pools run on BlueStore; MemStore (test clusters) estimates 0, so there the
# figures here run high by 300 bytes per object.
STORE_OVERHEAD_BYTES_PER_OBJECT = 300


# PER_TICK_DATACLASS: what a tick builds for every cache pool is a plain
# dataclass, not a frozen one: the sample (PoolSample, PoolCounters for the
# pool and its base), its rates and history entry (rates.Rates,
# HistoryEntry), the agent levels, the model and its estimates (models.
# PoolModel, InflowModel, FlushModel, EvictModel, HitModel, Predictions,
# Band, inflow's _Runs), the law's input and its decision (ControllerInput,
# Decision) and the Ratios in them.  A frozen dataclass sets each field
# through object.__setattr__, about 1,400 instructions against 150 for a
# plain attribute (callgrind, Python 3.11): some 170 fields a pool, a fifth
# of a steady tick.  They are read-only by convention (nothing assigns to
# one after it is built: change one with dataclasses.replace), and
# unsafe_hash keeps the hash a frozen one had.  Setting the fields through
# the instance's __dict__ instead would keep them frozen but turn their
# inline attributes into a dict (see tools/bench/tick_instructions.py).
@dataclass(unsafe_hash=True)
class PoolCounters:
    """Sums of the pool's PG stat_sum; cumulative unless noted."""
    num_objects: int = 0                  # level
    num_bytes: int = 0                    # level
    num_objects_dirty: int = 0            # level
    num_objects_omap: int = 0             # level
    num_objects_hit_set_archive: int = 0  # level
    num_bytes_hit_set_archive: int = 0    # level
    num_flush: int = 0
    num_flush_kb: int = 0
    num_evict: int = 0
    num_evict_kb: int = 0
    num_promote: int = 0
    num_read: int = 0
    num_read_kb: int = 0
    num_write: int = 0
    num_write_kb: int = 0
    num_flush_mode_high: int = 0          # level: PGs in that agent mode now
    num_flush_mode_low: int = 0           # level
    num_evict_mode_some: int = 0          # level
    num_evict_mode_full: int = 0          # level
    num_objects_degraded: int = 0         # level
    num_objects_misplaced: int = 0        # level
    num_objects_unfound: int = 0          # level

    @classmethod
    def from_stat_sum(cls, stat_sum: Mapping[str, Any]) -> 'PoolCounters':
        # Positional, from names listed once: twice a cache pool every tick.
        # The mgr's stat_sum has every counter: one itemgetter call reads
        # them all; a missing one counts as 0.
        try:
            values = _get_counters(stat_sum)
        except KeyError:
            return cls(*[int(stat_sum.get(name, 0)) for name in COUNTER_NAMES])
        return cls(*map(int, values))


COUNTER_NAMES = tuple(f.name for f in fields(PoolCounters))
_get_counters = operator.itemgetter(*COUNTER_NAMES)


CUMULATIVE_COUNTERS = ('num_flush', 'num_flush_kb', 'num_evict', 'num_evict_kb',
                       'num_promote', 'num_read', 'num_read_kb', 'num_write', 'num_write_kb')


# Not frozen, hashable as if it were: see PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class PoolSample:
    pool_id: int
    mono: float        # time.monotonic() when taken: for rates, immune to clock steps
    wall: float        # time.time() when taken: for display
    num_pg: int
    counters: PoolCounters
    # The base pool's counters: client IO the cache proxied lands there (with
    # the agent's flushes and the promotions' reads).  None if not reported.
    base: Optional[PoolCounters] = None
    # pool_stats' `acting` of the pool and of its base: the sum of the
    # acting set sizes of the PGs whose stats the mgr has.  A PG no OSD has
    # reported to this mgr (just after a failover, just after a split or
    # merge) adds 0 and counts as empty: when the sum goes up, stats came
    # back (see rates.derive_rates).
    acting: int = 0
    base_acting: int = 0
    # The pool base holds the counters of (-1: not known).  A tier moved to
    # another base keeps its history, but the two pools' counters must not
    # be subtracted for proxied figures (see rates._proxied_rates).
    base_pool_id: int = -1


# Not frozen, hashable as if it were: see PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class AgentLevels:
    """Fill and dirty as the OSD agent computes them (agent_choose_mode), summed
    over the pool: hit-set archives excluded, store overhead added, dirty bytes
    estimated from the average object size, against target_max_bytes (or
    target_max_objects when that gives the larger fraction).  The agent acts
    per PG against target/pg_num, so single PGs cross a ratio before the pool
    average does; agent_pgs in status counts the PGs actually in each mode."""
    user_objects: int
    user_bytes: int
    dirty_objects: int
    dirty_bytes: int
    fill: Optional[float]    # fraction of target; None without a target
    dirty: Optional[float]

    @property
    def avg_object_bytes(self) -> float:
        """The agent's average object size (0.0 with no objects)."""
        return self.user_bytes / self.user_objects if self.user_objects else 0.0


def agent_levels(tier: CacheTier, c: PoolCounters) -> AgentLevels:
    unflushable = c.num_objects_hit_set_archive
    dirty = c.num_objects_dirty
    if tier.base_is_erasure:
        # An EC base has no omap: the agent cannot flush omap objects.
        unflushable += c.num_objects_omap
        dirty = max(dirty - c.num_objects_omap, 0)
    user_objects = max(c.num_objects - unflushable, 0)
    user_bytes = max(c.num_bytes - c.num_bytes_hit_set_archive, 0)
    user_bytes += STORE_OVERHEAD_BYTES_PER_OBJECT * user_objects
    avg = user_bytes / user_objects if user_objects else 0.0
    dirty_bytes = int(dirty * avg)
    fill: Optional[float] = None
    dirty_frac: Optional[float] = None
    if tier.target_max_bytes > 0:
        fill = user_bytes / tier.target_max_bytes
        dirty_frac = dirty_bytes / tier.target_max_bytes
    if tier.target_max_objects > 0:
        fill = max(fill or 0.0, user_objects / tier.target_max_objects)
        dirty_frac = max(dirty_frac or 0.0, dirty / tier.target_max_objects)
    return AgentLevels(user_objects=user_objects, user_bytes=user_bytes,
                       dirty_objects=dirty, dirty_bytes=dirty_bytes,
                       fill=fill, dirty=dirty_frac)


def stat_sums(pool_stats: Mapping[str, Any], wanted: Optional[Collection[int]] = None
              ) -> Dict[int, Tuple[int, int, Mapping[str, Any]]]:
    """pool id -> (num_pg, acting, stat_sum) from get('pool_stats'), for the
    pools in wanted (default all): a tick needs the cache pools and their
    bases, of perhaps a thousand pools."""
    out: Dict[int, Tuple[int, int, Mapping[str, Any]]] = {}
    for entry in pool_stats.get('pool_stats', []):
        pid = int(entry['poolid'])
        if wanted is None or pid in wanted:
            out[pid] = (int(entry.get('num_pg', 0)), int(entry.get('acting', 0)),
                        entry.get('stat_sum', {}))
    return out


def take_samples(get: Getter, tiers: Mapping[int, CacheTier], mono: float,
                 wall: float) -> Dict[int, PoolSample]:
    """Sample every cache pool in tiers; pools missing from pool_stats (just
    created, or just deleted) are left out."""
    if not tiers:
        return {}
    sums = stat_sums(get('pool_stats'), {*tiers, *(t.base_pool_id for t in tiers.values())})
    samples: Dict[int, PoolSample] = {}
    for pid, tier in tiers.items():
        if pid not in sums:
            continue
        num_pg, acting, stat_sum = sums[pid]
        # A base with other tiers: their flushes and promotions would read
        # as this tier's proxied IO.  Without its counters those figures
        # are unknown, not wrong.
        base = sums.get(tier.base_pool_id) if not tier.other_tiers else None
        samples[pid] = PoolSample(pool_id=pid, mono=mono, wall=wall, num_pg=num_pg,
                                  counters=PoolCounters.from_stat_sum(stat_sum),
                                  base=PoolCounters.from_stat_sum(base[2]) if base else None,
                                  acting=acting, base_acting=base[1] if base else 0,
                                  base_pool_id=tier.base_pool_id if base else -1)
    return samples
