"""Progress events, as pg_autoscaler posts them: when tiertune lowers a
pool's dirty ratio, an event follows the dirty data down to the new level."""

import uuid
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from .bounds import OSD_AGENT_SLOP

# An event that has not finished by then is closed: the drain is the agent's
# business, and a stuck event in `ceph -s`/`ceph progress` helps nobody.
DRAIN_EVENT_MAX_S = 1800.0
# A drain an earlier mgr started is posted again only this far (fraction of
# the target) above its ratio: the agent flushes only past the ratio, so
# under writes the level sits just above it once the drain is done (a
# review helper saw a finished drain posted again, to fail 30 min on).
DRAIN_RESUME_MARGIN = 0.05
# A drain is done once the level is within this share of its ratio above
# it: the agent stops flushing a PG at ratio - slop and starts again past
# ratio + slop (slop = ratio x osd_agent_slop), so under writes the pool's
# level hovers about the ratio, and a level at or below the ratio never
# came (a review helper saw such a drain, at 0.305 against 0.30, failed 30
# min on).  Twice the slop: the PGs' reports reach the mgr out of step.
DRAIN_DONE_MARGIN = 2 * OSD_AGENT_SLOP
# A sample with fewer PG copies than the event has seen (DrainEvent.acting)
# is waited out this long before its level counts: OSDs report their PGs
# every 5 s (mgr_stats_period), and a split's new PGs within seconds of
# peering; fewer for longer is the pool's state now.
PARTIAL_STATS_WAIT_S = 60.0


@dataclass
class DrainEvent:
    ev_id: str
    pool: str
    start_dirty: float      # pool-level dirty fraction when the change was made
    target_dirty: float     # the new dirty ratio
    started_mono: float
    shown: float = 0.0      # the progress last posted: it never goes back
    # The PG copies whose stats the event's samples summed (pool_stats'
    # acting, PoolSample.acting).  A sample with fewer lacks PGs no OSD has
    # reported to the mgr (a split's new PGs, an OSD's stats late after a
    # failover), which count as empty: its level reads low for want of
    # them, not for a drain, and is waited out (PARTIAL_STATS_WAIT_S).
    acting: int = 0
    partial_since: Optional[float] = None   # since when samples have had fewer

    def done_at(self) -> float:
        return self.target_dirty * (1.0 + DRAIN_DONE_MARGIN)


# (method, ev_id, kwargs) for the progress module; the caller sends them.
Call = Tuple[str, str, Dict[str, object]]


class DrainEvents:
    def __init__(self, new_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self.events: Dict[int, DrainEvent] = {}
        self.new_id = new_id

    def started(self, pool_id: int, pool: str, dirty_now: Optional[float], old_ratio: float,
                new_ratio: float, mono: float, acting: int = 0) -> List[Call]:
        """A change was applied; start an event if it lowered the dirty ratio
        below the pool's current dirty level (there is something to drain)."""
        calls: List[Call] = []
        if new_ratio >= old_ratio or dirty_now is None or dirty_now <= new_ratio:
            # Nothing to follow down now; a drain in progress toward a lower
            # ratio than this one waits for a level the agent no longer
            # flushes to.
            ev = self.events.get(pool_id)
            if ev is not None and new_ratio > ev.target_dirty:
                calls += self._close(pool_id)
            return calls
        calls += self._close(pool_id)
        ev = DrainEvent(self.new_id(), pool, dirty_now, new_ratio, mono, acting=acting)
        self.events[pool_id] = ev
        calls.append(self._update(ev, 0.0))
        return calls

    def resumed(self, pool_id: int, pool: str, dirty_now: Optional[float],
                new_ratio: float, started_mono: float, acting: int = 0) -> List[Call]:
        """A drain an earlier mgr started (the progress module's events go
        with the mgr that held them): followed again from the level now,
        its DRAIN_EVENT_MAX_S counted from the change."""
        if (pool_id in self.events or dirty_now is None
                or dirty_now <= new_ratio + DRAIN_RESUME_MARGIN):
            return []
        ev = DrainEvent(self.new_id(), pool, dirty_now, new_ratio, started_mono, acting=acting)
        self.events[pool_id] = ev
        return [self._update(ev, 0.0)]

    def renamed(self, names: Mapping[int, str]) -> None:
        """The pools' names now: a drain's message and refs follow a rename
        (they named the old one for as long as the event ran)."""
        for pid, ev in self.events.items():
            ev.pool = names.get(pid, ev.pool)

    def tick(self, dirty: Dict[int, Optional[float]], on: Dict[int, bool],
             mono: float, acting: Optional[Mapping[int, int]] = None) -> List[Call]:
        """acting: per pool, its sample's acting (PoolSample.acting)."""
        calls: List[Call] = []
        for pid in list(self.events):
            ev = self.events[pid]
            level = dirty.get(pid)
            if not on.get(pid) or level is None:
                calls += self._close(pid)
                continue
            seen = acting.get(pid, 0) if acting is not None else 0
            if seen < ev.acting:
                if ev.partial_since is None:
                    ev.partial_since = mono
                if mono - ev.partial_since < PARTIAL_STATS_WAIT_S:
                    # Neither done nor failed on a level short of PGs, and
                    # the bar holds.
                    continue
                # Fewer PG copies for good (OSDs down, a merge, a smaller
                # size): the level as it is now.
            ev.partial_since = None
            ev.acting = seen
            if mono - ev.started_mono > DRAIN_EVENT_MAX_S and level > ev.done_at():
                # Failed, not completed: `ceph progress` then says the
                # level was not reached, rather than that it was.
                del self.events[pid]
                calls.append(('fail', ev.ev_id, {'message': (
                    f'dirty data of cache pool {ev.pool} still at {level:.1%} of target after '
                    f'{DRAIN_EVENT_MAX_S / 60:.0f} min, not down to {ev.target_dirty:.1%}: '
                    f'clients write as fast as the agent flushes, or the base is slow')}))
                continue
            if level <= ev.done_at():
                calls += self._close(pid)
                continue
            span = ev.start_dirty - ev.target_dirty
            done = 1.0 if span <= 0 else (ev.start_dirty - level) / span
            # Writes during the drain raise the level again: the bar holds
            # where it was rather than go back (0.50 -> 0.25 -> 0.75 seen).
            ev.shown = max(ev.shown, min(max(done, 0.0), 1.0))
            calls.append(self._update(ev, ev.shown))
        return calls

    def _update(self, ev: DrainEvent, progress: float) -> Call:
        msg = (f'tiertune: draining dirty data of cache pool {ev.pool} '
               f'({ev.start_dirty:.0%} -> {ev.target_dirty:.0%} of target)')
        return ('update', ev.ev_id, {'ev_msg': msg, 'ev_progress': progress,
                                     'refs': [('pool', ev.pool)], 'add_to_ceph_s': False})

    def _close(self, pool_id: int) -> List[Call]:
        ev = self.events.pop(pool_id, None)
        return [('complete', ev.ev_id, {})] if ev else []
