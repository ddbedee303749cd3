"""PGs a split left with invalid stats, on which the tier agent idles.

A PG split gives each child PG estimated stats, marked invalid until the
PG is scrubbed, and PrimaryLogPG::agent_choose_mode leaves a PG with
invalid stats idle: it neither flushes nor evicts, and once its share of
the target fills, writes to it wait.  That is why `osd pool set <cache>
pg_num` refuses without --yes-i-really-mean-it: splits in cache pools must
be followed by scrubs.  With noscrub set, or scrubs slow to come, they are
not, and nothing in Ceph's health says so.

The pool counters a tick reads do not tell which PGs are invalid; only the
per-PG stats do, and get('pg_stats') builds every PG of the cluster for
Python (the balancer avoids it in upmap mode for that cost).  So they are
read only for a cache pool tiertune has not seen before or whose pg_num
it saw change (across a restart too: the pg_num seen is stored), then
every RECHECK_TICKS ticks while that pool has PGs with invalid stats or a
PG count change in progress.  A steady tick reads none.
"""

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from .topology import CacheTier

# Ticks between reads while a pool is watched: two minutes at the default
# 30 s sleep_interval, against scrubs that take seconds to minutes a PG.
RECHECK_TICKS = 4


def invalid_stats_pgs(pg_stats: Mapping[str, Any], pools: Set[int]) -> Dict[int, int]:
    """Per pool of pools, its PGs whose stats are invalid, from
    get('pg_stats') (entries with pgid '<pool>.<seed hex>')."""
    out = {pid: 0 for pid in pools}
    for pg in pg_stats.get('pg_stats', []):
        pid = int(str(pg['pgid']).split('.', 1)[0])
        if pid in out and pg.get('stats_invalid'):
            out[pid] += 1
    return out


@dataclass
class SplitWatch:
    """Which cache pools' PGs to read, and what the last read found."""
    pg_num_seen: Dict[int, int] = field(default_factory=dict)
    watching: Set[int] = field(default_factory=set)
    # PGs with invalid stats per watched pool, as last read (not stored:
    # a new mgr reads the pools it watches on its first tick).
    invalid: Dict[int, int] = field(default_factory=dict)
    ticks_to_read: int = 0

    def observe(self, tiers: Mapping[int, CacheTier]) -> bool:
        """Note each tier's pg_num; a pool new to the watch or whose pg_num
        moved is read on the next due(). True when the stored part changed."""
        changed = False
        for pid in [p for p in self.pg_num_seen if p not in tiers]:
            del self.pg_num_seen[pid]
            self.watching.discard(pid)
            self.invalid.pop(pid, None)
            changed = True
        for pid, tier in tiers.items():
            if self.pg_num_seen.get(pid) != tier.pg_num:
                self.pg_num_seen[pid] = tier.pg_num
                self.watching.add(pid)
                self.ticks_to_read = 0
                changed = True
        return changed

    def due(self) -> bool:
        """Whether this tick reads the PGs (counts the ticks between reads)."""
        if not self.watching:
            return False
        if self.ticks_to_read > 0:
            self.ticks_to_read -= 1
            return False
        return True

    def read(self, pg_stats: Mapping[str, Any], tiers: Mapping[int, CacheTier]) -> bool:
        """Take a read of get('pg_stats'); a pool whose PGs all have valid
        stats, and no PG count change in progress, is no longer watched.
        True when the stored part changed."""
        counts = invalid_stats_pgs(pg_stats, self.watching)
        changed = False
        for pid, n in counts.items():
            tier = tiers.get(pid)
            if n and tier is not None:
                self.invalid[pid] = n
                continue
            self.invalid.pop(pid, None)
            if tier is None or tier.pg_change is None:
                self.watching.discard(pid)
                changed = True
        self.ticks_to_read = RECHECK_TICKS - 1
        return changed

    def failed(self) -> None:
        """A read that raised: tried again RECHECK_TICKS ticks on."""
        self.ticks_to_read = RECHECK_TICKS - 1

    def to_store(self) -> str:
        return json.dumps({'pg_num': {str(k): v for k, v in sorted(self.pg_num_seen.items())},
                           'watching': sorted(self.watching)})


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
    return {pid: t if t.invalid_stats_pgs == invalid.get(pid, 0)
            else dataclasses.replace(t, invalid_stats_pgs=invalid.get(pid, 0))
            for pid, t in tiers.items()}
