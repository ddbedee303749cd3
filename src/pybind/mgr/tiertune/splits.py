"""PGs a split left with invalid stats, on which the tier agent idles.

A PG split gives each child PG estimated stats, marked invalid until the
PG is scrubbed, and PrimaryLogPG::agent_choose_mode leaves a PG with
invalid stats idle: it neither flushes nor evicts, so its dirty data is
not written back and it grows past its share of the target (toward
filling the cache's OSDs: writes never wait for room there, as it never
goes FULL).  That is why `osd pool set <cache> pg_num` refuses without
--yes-i-really-mean-it: splits in cache pools must be followed by scrubs.
With noscrub set, or scrubs slow to come, they are not.

The pool counters a tick reads do not tell which PGs are invalid; only the
per-PG stats do, and get('pg_stats') builds every PG of the cluster for
Python (the balancer avoids it in upmap mode for that cost).  So they are
read only for a cache pool tiertune has not seen before or whose pg_num
it saw change (across a restart too: the pg_num seen is stored), then
every RECHECK_TICKS sleep intervals while that pool has PGs with invalid
stats or PGs its OSDs have not reported yet; only for pools tiertune looks
at (mode warn or on), and not while their PG count moves (the module
holds them for that; it reads once the move ends).  A steady tick reads
none.
"""

import json
import math
from dataclasses import dataclass, field
from typing import Any, Collection, Dict, List, Mapping, Optional, Set, Tuple

from .topology import CacheTier, with_fields

# Sleep intervals between reads while a pool is watched: two minutes at
# the default 30 s, against scrubs that take seconds to minutes a PG.
# Counted in time, not ticks: a command or an option change wakes a tick.
RECHECK_TICKS = 4
# PG states whose stats are not the PG's own yet: no OSD has reported the
# PG (a child just split off reads so until its primary does).
NOT_REPORTED_STATES = ('unknown', 'creating')
# The mgr data the watch reads, and the fields of its entries it reads.
SPLIT_SOURCE = 'pg_stats'
SPLIT_FIELDS = ('pgid', 'state', 'stats_invalid')


def pg_pool_id(pg: Mapping[str, Any]) -> int:
    """The pool of a get('pg_stats') entry (its pgid is '<pool>.<seed hex>')."""
    return int(str(pg['pgid']).split('.', 1)[0])


@dataclass(frozen=True)
class PoolPgs:
    """What a read of get('pg_stats') says of one pool's PGs."""
    invalid: int        # PGs whose stats are invalid
    listed: int         # PGs listed
    unreported: int     # PGs no OSD has reported yet (NOT_REPORTED_STATES)

    def settled(self, pg_num: int) -> bool:
        """Every PG listed and reported, none invalid: nothing left to watch."""
        return not self.invalid and not self.unreported and self.listed == pg_num


def pool_pgs(pg_stats: Mapping[str, Any], pools: Collection[int]) -> Dict[int, PoolPgs]:
    """Per pool of pools, its PGs as get('pg_stats') lists them (entries
    with pgid '<pool>.<seed hex>', state, stats_invalid)."""
    counts = {pid: [0, 0, 0] for pid in pools}
    for pg in pg_stats.get('pg_stats', []):
        c = counts.get(pg_pool_id(pg))
        if c is None:
            continue
        c[0] += bool(pg.get('stats_invalid'))
        c[1] += 1
        c[2] += any(s in NOT_REPORTED_STATES for s in str(pg.get('state', '')).split('+'))
    return {pid: PoolPgs(*c) for pid, c in counts.items()}


@dataclass
class SplitWatch:
    """Which cache pools' PGs to read, and what the last read found."""
    pg_num_seen: Dict[int, int] = field(default_factory=dict)
    watching: Set[int] = field(default_factory=set)
    # PGs with invalid stats per watched pool, as last read (not stored:
    # a new mgr reads the pools it watches on its first tick).
    invalid: Dict[int, int] = field(default_factory=dict)
    # When each watched pool's next read is due (the tick's monotonic
    # clock; -inf: at once).  Per pool: another pool's split or merge
    # steps must neither hurry nor delay its reads.
    next_read: Dict[int, float] = field(default_factory=dict)
    # The sleep_interval next_read was set under (reschedule).
    interval_s: Optional[float] = None

    def reschedule(self, interval_s: float) -> None:
        """Reads due RECHECK_TICKS sleep intervals after the last one, on
        the interval now: set under an older one, lowered from 3600 s to 3
        s and the PGs scrubbed, the pool stayed unread (and held, and
        TIERTUNE_SPLIT_UNSCRUBBED raised) for 4 h (a review helper)."""
        if self.interval_s is not None and interval_s != self.interval_s:
            shift = RECHECK_TICKS * (interval_s - self.interval_s)
            for pid, t in self.next_read.items():
                if math.isfinite(t):
                    self.next_read[pid] = t + shift
        self.interval_s = interval_s

    def observe(self, tiers: Mapping[int, CacheTier]) -> bool:
        """Note each tier's pg_num; a pool new to the watch or whose pg_num
        moved is read at once, or once its PG count stops moving (its
        pg_num is stored then, not at every step of a move).  True when
        the stored part changed."""
        changed = False
        for pid in [p for p in {*self.pg_num_seen, *self.watching} if p not in tiers]:
            self.pg_num_seen.pop(pid, None)
            self.watching.discard(pid)
            self.invalid.pop(pid, None)
            self.next_read.pop(pid, None)
            changed = True
        for pid, tier in tiers.items():
            if self.pg_num_seen.get(pid) == tier.pg_num:
                continue
            if pid not in self.watching:
                self.watching.add(pid)
                changed = True
            self.next_read[pid] = -math.inf
            if tier.pg_change is None:
                self.pg_num_seen[pid] = tier.pg_num
                changed = True
        return changed

    def due(self, looked_at: Collection[int], mono: float) -> bool:
        """Whether this tick reads the PGs: a watched pool looked at (mode
        warn or on, its PG count at rest) has its read due."""
        return any(pid in self.watching and mono >= self.next_read.get(pid, -math.inf)
                   for pid in looked_at)

    def read(self, pg_stats: Mapping[str, Any], tiers: Mapping[int, CacheTier],
             mono: float, interval_s: float) -> bool:
        """Take a read of get('pg_stats') for every watched pool; a pool
        whose PGs are all listed, reported and valid, with no PG count
        change in progress, is no longer watched.  A pool whose count
        moves is read again once it stops.  True when the stored part
        changed."""
        changed = False
        for pid, pgs in pool_pgs(pg_stats, self.watching).items():
            tier = tiers.get(pid)
            if pgs.invalid and tier is not None:
                self.invalid[pid] = pgs.invalid
            else:
                self.invalid.pop(pid, None)
            if tier is None or (tier.pg_change is None and pgs.settled(tier.pg_num)):
                self.watching.discard(pid)
                self.next_read.pop(pid, None)
                changed = True
            elif tier.pg_change is None:
                self.next_read[pid] = mono + RECHECK_TICKS * interval_s
        self.interval_s = interval_s
        return changed

    def failed(self, looked_at: Collection[int], mono: float, interval_s: float) -> None:
        """A read that raised: the pools it was for are tried again as a
        read would have them."""
        for pid in looked_at:
            if pid in self.watching:
                self.next_read[pid] = mono + RECHECK_TICKS * interval_s
        self.interval_s = interval_s

    def shown(self, looked_at: Collection[int]) -> Dict[int, int]:
        """The counts to show and hold on: those of the pools looked at (a
        pool in off is not read, and its last count would go stale)."""
        return {pid: n for pid, n in self.invalid.items() if pid in looked_at}

    def to_store(self) -> str:
        return json.dumps({'pg_num': {str(k): v for k, v in sorted(self.pg_num_seen.items())},
                           'watching': sorted(self.watching & set(self.pg_num_seen))})


def split_watch_from_store(text: Optional[str]) -> Tuple[SplitWatch, List[str]]:
    """The stored watch, and what could not be read of it (an unreadable
    store starts a new watch: every cache pool is read once)."""
    if not text:
        return SplitWatch(), []
    try:
        d = json.loads(text)
        seen = {int(k): int(v) for k, v in d['pg_num'].items()}
        watching = {int(p) for p in d['watching']}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return SplitWatch(), [f'stored split watch not used: {type(e).__name__}: {e}']
    return SplitWatch(seen, watching & set(seen)), []


def with_invalid_stats(tiers: Mapping[int, CacheTier],
                       invalid: Mapping[int, int]) -> Dict[int, CacheTier]:
    """tiers with each pool's invalid_stats_pgs as last read (the same
    CacheTier where it did not change: SeriesCache follows it by identity)."""
    return {pid: with_fields(t, invalid_stats_pgs=invalid.get(pid, 0))
            for pid, t in tiers.items()}
