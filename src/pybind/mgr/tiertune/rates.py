"""Rates from successive samples, and the bounded per-pool history they live in."""

import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, Iterable, List, Mapping, Optional, Tuple

from .sampling import PoolSample

# Shorter than this between samples and the counters (reported by OSDs every
# few seconds) have barely moved: a rate would be mostly noise.
MIN_RATE_INTERVAL_S = 1.0


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class Rates:
    interval_s: float
    flush_bytes_sec: float
    flush_ops_sec: float
    evict_bytes_sec: float
    evict_ops_sec: float
    promote_ops_sec: float
    read_bytes_sec: float
    read_ops_sec: float
    write_bytes_sec: float
    write_ops_sec: float
    dirty_bytes_growth_sec: float
    # Client IO the cache passed to the base pool rather than serving it (see
    # proxied_totals).  None when the base pool was not sampled both times.
    # The cache's and the base's OSDs report at different moments, so one
    # interval can see a flush before the base write it caused (or the other
    # way round): a value can be negative for an interval; sums are exact.
    proxied_read_bytes_sec: Optional[float] = None
    proxied_read_ops_sec: Optional[float] = None
    proxied_write_bytes_sec: Optional[float] = None
    proxied_write_ops_sec: Optional[float] = None

    def as_dict(self) -> Dict[str, Optional[float]]:
        return {k: None if v is None else round(v, 3) for k, v in self.__dict__.items()}


ProxiedTotals = Tuple[float, float, float, float]   # read kb, reads, write kb, writes


def proxied_totals(s: PoolSample) -> Optional[ProxiedTotals]:
    """Cumulative client IO the cache proxied to the base: the base pool's
    counters less the agent's flushes and the promotions' copy-get reads
    (which count as reads but add no read kb)."""
    if s.base is None:
        return None
    b, c = s.base, s.counters
    return (float(b.num_read_kb), float(b.num_read - c.num_promote),
            float(b.num_write_kb - c.num_flush_kb), float(b.num_write - c.num_flush))


def _moved(prev: PoolSample, cur: PoolSample) -> bool:
    """The two samples' base counters are of different pools (the tier was
    moved to another base between them; -1 is not known)."""
    return (prev.base_pool_id != cur.base_pool_id
            and prev.base_pool_id >= 0 and cur.base_pool_id >= 0)


def _base_reset(prev: PoolSample, cur: PoolSample) -> bool:
    assert prev.base is not None and cur.base is not None
    p, c = prev.base, cur.base
    return (c.num_read < p.num_read or c.num_read_kb < p.num_read_kb
            or c.num_write < p.num_write or c.num_write_kb < p.num_write_kb)


def derive_rates(prev: PoolSample, cur: PoolSample,
                 prev_dirty_bytes: int = 0, cur_dirty_bytes: int = 0) -> Optional[Rates]:
    """None when no honest rate exists for the interval: too short or
    negative (a clock that went backwards), a counter that went down (the
    pool's PGs were recreated, or stats were reset), or stats that came back
    (the pool's `acting` went up: PGs that counted as empty reported again,
    and their whole past would read as this interval's IO; also when an
    OSD comes back, an interval lost)."""
    dt = cur.mono - prev.mono
    if dt < MIN_RATE_INTERVAL_S or cur.acting > prev.acting:
        return None
    p, c = prev.counters, cur.counters
    # Counter by counter, not a loop over names with getattr and a dict of
    # keyword arguments: every cache pool, every tick.
    deltas = (c.num_flush_kb - p.num_flush_kb, c.num_flush - p.num_flush,
              c.num_evict_kb - p.num_evict_kb, c.num_evict - p.num_evict,
              c.num_promote - p.num_promote,
              c.num_read_kb - p.num_read_kb, c.num_read - p.num_read,
              c.num_write_kb - p.num_write_kb, c.num_write - p.num_write)
    if min(deltas) < 0:
        return None
    flush_kb, flush, evict_kb, evict, promote, read_kb, read, write_kb, write = deltas
    # The OSD counts each eviction (a delete by the agent) as a write of 0
    # kb: in the recorded drain an interval with no client IO has 11
    # writes, 0 kb, 11 evictions.  Left in, an agent that only evicts reads
    # as client IO the cache serves (a hit share of 1.0).  A PG reports
    # both counters together, so the difference is exact.
    client_writes = max(write - evict, 0)
    return Rates(dt, flush_kb * 1024 / dt, flush * 1.0 / dt, evict_kb * 1024 / dt,
                 evict * 1.0 / dt, promote * 1.0 / dt, read_kb * 1024 / dt, read * 1.0 / dt,
                 write_kb * 1024 / dt, client_writes * 1.0 / dt,
                 (cur_dirty_bytes - prev_dirty_bytes) / dt, *_proxied_rates(prev, cur, dt))


def _proxied_rates(prev: PoolSample, cur: PoolSample, dt: float) -> Tuple[float, ...]:
    """Rates' proxied_* figures in field order, or () when unknown."""
    p, c = proxied_totals(prev), proxied_totals(cur)
    if (p is None or c is None or _moved(prev, cur) or _base_reset(prev, cur)
            or cur.base_acting > prev.base_acting):
        return ()
    d = [(b - a) / dt for a, b in zip(p, c)]
    # proxied_read_bytes_sec, _read_ops_sec, _write_bytes_sec, _write_ops_sec
    return (d[0] * 1024, d[1], d[2] * 1024, d[3])


# Not frozen, hashable as if it were: see sampling.PER_TICK_DATACLASS.
@dataclass(unsafe_hash=True)
class HistoryEntry:
    sample: PoolSample
    dirty_bytes: int
    rates: Optional[Rates]   # over the interval ending at this sample


# Cumulative counters that go down and come back within this long were a
# partial report, not a reset: a new mgr starts with the PGs unknown and
# their stats zero until the OSDs report (after every failover, and on
# `ceph mgr module enable`), and a PG merge drops the merged PG's stats
# before the target PG reports them.  A rate measured from such a sample
# would count all that comes back as IO of one interval (a failover read
# as gigabytes a second of writes and flushes).  Counters still lower after
# this long were reset (PGs recreated, stats reset): the history goes on
# from the lower level.  A few of the OSDs' stats reports (mgr_stats_period,
# 5 s), and two ticks at the default 30 s sleep_interval.
DIP_CONFIRM_S = 60.0


def _dipped(prev: PoolSample, cur: PoolSample) -> bool:
    """A cumulative counter of the cache pool went down."""
    p, c = prev.counters, cur.counters
    return (c.num_flush < p.num_flush or c.num_flush_kb < p.num_flush_kb
            or c.num_evict < p.num_evict or c.num_evict_kb < p.num_evict_kb
            or c.num_promote < p.num_promote or c.num_read < p.num_read
            or c.num_read_kb < p.num_read_kb or c.num_write < p.num_write
            or c.num_write_kb < p.num_write_kb)


# A stored sample: the sample, its dirty bytes, and whether the interval
# into it was measured (see PoolHistory.add).
StoredSample = Tuple[PoolSample, int, bool]


class PoolHistory:
    def __init__(self, size: int) -> None:
        self.entries: Deque[HistoryEntry] = deque(maxlen=max(size, 2))
        # Set by HistoryBook.restore(gap_follows=True): the samples came from
        # the store, and this process has not kept one of its own since.
        # Its first is not measured from the newest stored one (see
        # not_current).
        self.restored_gap = False
        # That first sample's entry, while it is the newest (not_current).
        self._after_gap: Optional[HistoryEntry] = None
        # When (mono) counters first came in lower than the newest entry's,
        # while they still do (see DIP_CONFIRM_S).
        self._dip_since: Optional[float] = None
        # The same for the base's counters, against the newest sample kept
        # with them (see _without_dipped_base).
        self._base_dip_since: Optional[float] = None
        self._base_ref: Optional[PoolSample] = None

    def add(self, sample: PoolSample, dirty_bytes: int, measured: bool = True) -> HistoryEntry:
        """Add a sample; returns its entry, or the newest entry when the
        sample is not kept (a duplicate, or a partial report).  measured
        False: no rate into it (the interval before it is unknown), and
        kept whatever its counters: a stored sample the mgr that took it
        kept so (after a reset it had confirmed, lower counters than the
        sample before; checked again, the samples within DIP_CONFIRM_S
        after the reset were left out, a review helper found)."""
        rates = None
        after_gap = False
        if self.entries:
            last = self.entries[-1]
            if sample.mono <= last.sample.mono:
                # A sample no newer than the last one: the clock we rely on
                # does not go backwards, so this is a duplicate; keep the last.
                return last
            if measured and _dipped(last.sample, sample):
                if self._dip_since is None:
                    self._dip_since = sample.mono
                if sample.mono - self._dip_since < DIP_CONFIRM_S:
                    return last     # partial: the next rate is measured from last
            self._dip_since = None
            sample = self._without_dipped_base(sample)
            if self.restored_gap:
                # The first sample of this process after samples restored
                # from the store: the interval since the newest of them
                # spans the failover and the time since the last save (up
                # to samples_save_interval).  Its rates would be that
                # stretch's averages, read as the pool's IO now: after a
                # burst the old mgr had not saved, an idle cache read as
                # one filling (a "predicted full in 79 s" on the demo
                # cluster, health raised for a few ticks, and one change in
                # `on`).  What happened in it is not known: not measured.
                measured = self.restored_gap = False
                after_gap = True
            # Across a reset, None.
            rates = (derive_rates(last.sample, sample, last.dirty_bytes, dirty_bytes)
                     if measured else None)
        entry = HistoryEntry(sample=sample, dirty_bytes=dirty_bytes, rates=rates)
        self._after_gap = entry if after_gap else None
        self.entries.append(entry)
        if sample.base is not None:
            self._base_ref = sample
        return entry

    def _without_dipped_base(self, sample: PoolSample) -> PoolSample:
        """sample, without its base counters while they are below those of
        the newest sample kept with them, for up to DIP_CONFIRM_S (lower
        still after that, the base's counters were reset: kept again, and
        measured from).  Only the proxied figures come from them: the
        cache's own sample (its fill, dirty level, writes) is kept, not held
        back as a dip of the cache's counters is.  Kept, a partial base
        report (a PG merge on the base, an OSD slow to report) would read
        as a burst of proxied IO when it comes back; without them the
        intervals on either side have no proxied figures (unknown, not
        wrong)."""
        ref = self._base_ref
        if (ref is None or ref.base is None or sample.base is None or _moved(ref, sample)
                or not _base_reset(ref, sample)):
            self._base_dip_since = None
            return sample
        if self._base_dip_since is None:
            self._base_dip_since = sample.mono
        if sample.mono - self._base_dip_since < DIP_CONFIRM_S:
            return dataclasses.replace(sample, base=None)
        self._base_dip_since = None
        return sample

    def not_current(self) -> Optional[str]:
        """Why the newest measured interval does not describe the pool now,
        or None.  The estimates weight the intervals by their age from the
        newest one they have: with only stored samples, or this mgr's first
        sample after them (not measured), that one is older than the pool's
        state by up to samples_save_interval and the failover.  Not for
        the other intervals without rates (acting up, as through a
        backfill; a counter reset): those miss one tick's interval, and the
        model stays fitted on the rest (unfitted, it would clear and raise
        TIERTUNE_BOUNDS_BLOCK tick by tick through a backfill: a review
        helper)."""
        if self.restored_gap:
            return 'samples restored from the store, none taken by this mgr yet'
        if self._after_gap is not None and self.entries and self.entries[-1] is self._after_gap:
            return ('the first sample since the samples were restored: the interval '
                    'before it is not measured')
        return None

    def resize(self, size: int) -> None:
        self.entries = deque(self.entries, maxlen=max(size, 2))

    @property
    def latest(self) -> Optional[HistoryEntry]:
        return self.entries[-1] if self.entries else None

    def latest_rates(self) -> Optional[Rates]:
        return self.entries[-1].rates if self.entries else None

    def __len__(self) -> int:
        return len(self.entries)


class HistoryBook:
    """Per-pool histories, keyed by pool id (Ceph never reuses a pool id, so a
    pool deleted and created again under the same name starts afresh)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pools: Dict[int, PoolHistory] = {}

    def record(self, samples: Mapping[int, PoolSample], dirty_bytes: Mapping[int, int],
               present: Iterable[int]) -> List[int]:
        """Add this tick's samples; forget pools no longer present as cache
        tiers. Returns the ids forgotten."""
        present_ids = set(present)
        gone = [pid for pid in self.pools if pid not in present_ids]
        for pid in gone:
            del self.pools[pid]
        for pid, sample in samples.items():
            hist = self.pools.get(pid)
            if hist is None:
                hist = self.pools[pid] = PoolHistory(self.size)
            hist.add(sample, dirty_bytes.get(pid, 0))
        return gone

    def forget(self, pool_id: int) -> None:
        """Drop a pool's history: its next sample starts a new one."""
        self.pools.pop(pool_id, None)

    def resize(self, size: int) -> None:
        self.size = size
        for hist in self.pools.values():
            hist.resize(size)

    def get(self, pool_id: int) -> Optional[PoolHistory]:
        return self.pools.get(pool_id)

    def restore(self, pool_id: int, entries: Iterable[StoredSample],
                gap_follows: bool = False) -> int:
        """A pool's history from stored samples, oldest first
        (sample_store.decode): rates are derived again as they are added,
        but into those not measured then.  Replaces what the book had for
        the pool.  gap_follows: the samples come from the store (a mgr
        restart or failover), so the first one recorded next is not
        measured from them (see PoolHistory.add).  Returns how many it kept."""
        hist = self.pools[pool_id] = PoolHistory(self.size)
        for sample, dirty, measured in entries:
            hist.add(sample, dirty, measured)
        hist.restored_gap = gap_follows and bool(hist.entries)
        return len(hist)

    def saved_entries(self, pool_id: int) -> List[StoredSample]:
        """What restore takes back: the pool's samples, oldest first."""
        hist = self.pools.get(pool_id)
        if not hist:
            return []
        return [(e.sample, e.dirty_bytes, e.rates is not None) for e in hist.entries]
