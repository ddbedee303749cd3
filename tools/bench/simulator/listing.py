"""Where each PG's agent is in its pass over the PG's objects, and what
lies ahead of it.

PrimaryLogPG::agent_work lists a PG's objects in hash order from
agent_state->position, keeps the position between calls, and starts over
only when it passes the end of the hash space.  So what the agent meets
next is not the PG's mix of clean and dirty objects but the mix of the
stretch right ahead of the position, and that stretch has an order: a
drain that stops part-way (the PG's dirty level fell below the dirty
ratio) leaves the objects still dirty ahead of the position and the ones
it cleaned behind, and if the drain passed the end, the first stretch
ahead is the one the last surge wrote behind the position: dirty.  The
next surge's agent walks that stretch flushing each object and, in HIGH
mode, evicting it after: about one eviction per flush, though the PG may
be half clean.  Seen on the local cluster in an OSD log at debug_osd 10:
224 of 289 evictions were objects just flushed, and PGs whose position
did not pass the end met 0-10 clean objects in 40 s
(bench-results/cluster/overrun-rule.md).

Fluid model: per PG of a simulator row, its clean and dirty objects in
HASH_BINS equal stretches of the hash space, and the position.  New
objects land evenly over the hash space; the writes that dirty clean
objects dirty each stretch's in proportion to its clean objects.  The
agent walks from the position: it flushes the first dirty objects it
meets and evicts (or, not evicting, skips) the first clean ones, and the
position ends at the farther of the two.  Flushing HIGH (every op a
flush, one freed as each completes) it is not listed past a dirty object
it does not flush; flushing LOW it is (agent_work's flush quota is then
the low ops less those in flight), and the simulator keeps the PG's
clean share for its evictions (tier.py).  Within a stretch the objects
are taken as evenly spread, but the part of the position's stretch still
ahead of it is kept apart from the part behind.
"""

from typing import Optional, Tuple

import numpy as np

HASH_BINS = 32
AGENT_LISTED = 10              # osd_pool_default_cache_max_evict_check_size
_EPS = 1e-9

_Ahead = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class ListingPosition:
    def __init__(self, rows: int) -> None:
        self.clean = np.zeros((rows, HASH_BINS))     # per PG of the row, per stretch
        self.dirty = np.zeros((rows, HASH_BINS))
        self.pos = np.zeros(rows)                    # in stretches, 0 <= pos < HASH_BINS
        # the part of the position's stretch still ahead of it (the part
        # behind was listed, so it is not spread like the rest)
        self.here_clean = np.zeros(rows)
        self.here_dirty = np.zeros(rows)
        self._rows = np.arange(rows)[:, None]
        self._row_ix = np.arange(rows)
        self._cols = np.arange(HASH_BINS + 1)[None, :]
        # _ahead() and _reach() as last made, until the stretches change
        # (the step asks met() and then advance() for the same flushes)
        self._ahead_of: Optional[_Ahead] = None
        self._reach_of: Optional[Tuple[bytes, np.ndarray, np.ndarray]] = None

    def _changed(self) -> None:
        self._ahead_of = self._reach_of = None

    def _here(self) -> Tuple[np.ndarray, np.ndarray]:
        """The position's stretch, and the share of it behind the position."""
        first = np.floor(self.pos).astype(int)
        return first, self.pos - first

    def land(self, new_clean: np.ndarray, new_dirty: np.ndarray, dirtied: np.ndarray) -> None:
        """Clients added objects (clean or dirty) and dirtied clean ones."""
        self._changed()
        _, f = self._here()
        clean = np.add.reduce(self.clean, axis=1)
        frac = np.minimum(np.divide(dirtied, clean, out=np.zeros_like(dirtied),
                                    where=clean > _EPS), 1.0)
        ahead = 1.0 - f
        moved_here = self.here_clean * frac
        self.here_clean += new_clean / HASH_BINS * ahead - moved_here
        self.here_dirty += new_dirty / HASH_BINS * ahead + moved_here
        moved = self.clean * frac[:, None]
        self.clean += (new_clean / HASH_BINS)[:, None] - moved
        self.dirty += (new_dirty / HASH_BINS)[:, None] + moved
        np.maximum(self.clean, 0.0, out=self.clean)
        np.maximum(self.here_clean, 0.0, out=self.here_clean)

    def match(self, clean: np.ndarray, dirty: np.ndarray) -> None:
        """Scale each row's stretches to the PG's totals, kept by the
        simulator's key bins (flushes and evictions are taken from those
        in proportion; the two drift apart by rounding only)."""
        self._changed()
        _, f = self._here()
        for have, here, want in ((self.clean, self.here_clean, clean),
                                 (self.dirty, self.here_dirty, dirty)):
            total = np.add.reduce(have, axis=1)
            k = np.divide(want, total, out=np.zeros_like(want), where=total > _EPS)
            have *= k[:, None]
            here *= k
            empty = total <= _EPS
            if empty.any():
                have[empty] = (want[empty] / HASH_BINS)[:, None]
                here[empty] = (want[empty] / HASH_BINS * (1.0 - f[empty]))

    def _ahead(self) -> _Ahead:
        """The stretches in the order the agent meets them from its
        position, the one it is in twice (its part ahead first, its part
        behind last): (index, clean, dirty, width), each (rows, bins + 1)."""
        if self._ahead_of is None:
            self._ahead_of = self._make_ahead()
        return self._ahead_of

    def _make_ahead(self) -> _Ahead:
        first, f = self._here()
        idx = (first[:, None] + self._cols) % HASH_BINS
        width = np.ones(idx.shape)
        width[:, 0] = 1.0 - f
        width[:, -1] = f
        c = self.clean[self._rows, idx]
        d = self.dirty[self._rows, idx]
        here_c = np.minimum(self.here_clean, c[:, 0])
        here_d = np.minimum(self.here_dirty, d[:, 0])
        c[:, -1] = c[:, 0] - here_c
        d[:, -1] = d[:, 0] - here_d
        c[:, 0] = here_c
        d[:, 0] = here_d
        return idx, c, d, width

    def _reach(self, c: np.ndarray, d: np.ndarray,
               flushes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Per column, the share the agent passes to flush `flushes`
        objects, and the share it lists doing so: AGENT_LISTED - 1 objects
        further, the rest of its last listing.  c and d: _ahead()'s."""
        key = flushes.tobytes()
        if self._reach_of is None or self._reach_of[0] != key:
            g = _passed(d, flushes)
            objects = c + d
            listed = np.add.reduce(objects * g, axis=1) + (AGENT_LISTED - 1)
            self._reach_of = (key, g, np.maximum(_passed(objects, listed), g))
        return self._reach_of[1], self._reach_of[2]

    def met(self, flushes: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """While the agent flushes `flushes` objects: the clean and dirty
        objects it passes, and the clean ones it lists (those and the rest
        of its last listing): the most it can evict without flushing more.
        Rows that flush nothing: the PG's objects (not flushing, the agent
        lists past dirty objects, so it meets the PG's mix)."""
        _, c, d, _ = self._ahead()
        g, listed = self._reach(c, d, flushes)
        met_c, met_d = np.add.reduce(c * g, axis=1), np.add.reduce(d * g, axis=1)
        listed_c = np.add.reduce(c * listed, axis=1)
        idle = flushes <= _EPS
        if idle.any():
            met_c = np.where(idle, np.add.reduce(c, axis=1), met_c)
            met_d = np.where(idle, np.add.reduce(d, axis=1), met_d)
        return met_c, met_d, listed_c

    def advance(self, flushed: np.ndarray, evicted_flushed: np.ndarray,
                clean_met: np.ndarray, held: np.ndarray) -> None:
        """The agent flushed `flushed` objects, evicted `evicted_flushed` of
        them as each flush completed, and evicted `clean_met` clean objects
        it met in the listing (the clean ones it passes while flushing and
        not evicting it skips).  A PG flushing HIGH (`held`) is not listed
        past a dirty object its agent does not flush; others are."""
        idx, c, d, width = self._ahead()
        g_flush, listed = self._reach(c, d, flushed)
        self._changed()
        g_meet = _passed(c, clean_met)
        g_meet = np.where(held[:, None], np.minimum(g_meet, listed), g_meet)
        # the position moves to the farther of the two, short of a whole
        # round (which would bring it back into the stretch's part behind)
        g_pos = np.maximum(g_flush, g_meet)
        g_pos[:, -1] = 0.0
        passed = np.add.reduce(g_pos * width, axis=1)
        # where it stops: the first column not wholly passed
        stop = np.minimum(np.add.reduce(g_pos >= 1.0 - _EPS, axis=1), HASH_BINS)
        left = 1.0 - g_pos[self._row_ix, stop]
        here_c = c[self._row_ix, stop] * left
        here_d = d[self._row_ix, stop] * left
        fl = d * g_flush
        gone = np.divide(evicted_flushed, flushed, out=np.zeros_like(flushed),
                         where=flushed > _EPS)
        d_delta = -fl
        c_delta = fl * (1.0 - np.minimum(gone, 1.0))[:, None]
        c_delta -= c * g_meet
        # the last column is the first's stretch again: fold it in, and the
        # rest index each stretch once
        for have, delta in ((self.dirty, d_delta), (self.clean, c_delta)):
            delta[:, 0] += delta[:, -1]
            have[self._rows, idx[:, :-1]] += delta[:, :-1]
        np.maximum(self.clean, 0.0, out=self.clean)
        np.maximum(self.dirty, 0.0, out=self.dirty)
        self.pos = (self.pos + passed) % HASH_BINS
        self.here_clean, self.here_dirty = here_c, here_d


def _passed(counts: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per column, the share of it passed to meet `want` of `counts` in
    column order: 1 before the column where the count is reached, the
    part needed of that one, 0 after (all 1 if the row holds less)."""
    cum = np.cumsum(counts, axis=1)
    before = cum - counts
    need = want[:, None] - before
    share = np.divide(need, counts, out=(need > 0).astype(float), where=counts > _EPS)
    return np.minimum(np.maximum(share, 0.0), 1.0)
