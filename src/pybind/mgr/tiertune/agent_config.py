"""Whether the cache OSDs' tier agent may do anything at all, as the mon's
config database sets its op limits.

The OSD's agent thread takes a PG only while its quota of agent ops in
flight is above zero: osd_agent_max_ops while a PG of the OSD flushes
HIGH, osd_agent_max_low_ops otherwise (OSDService::agent_entry).  Either
at 0, the ratios tiertune moves do nothing there (at max_low_ops 0 not
even eviction runs until a PG reaches dirty_high), and a cache that
neither flushes nor evicts fills until writes to objects it lacks block.
Seen on the local cluster: both at 0, a write burst met a FULL PG and
waited 10 minutes while the pool read as idle.  Ceph raises no health
check for it (notieragent, which does the same, is an OSD map flag Ceph
warns about).

Read every tick: `ceph config set` changes no OSD map.  A value set in an
OSD's ceph.conf or injected at runtime is not in the database, and not
seen.
"""

import dataclasses
from typing import Callable, Dict, Mapping, Optional

from .topology import CacheTier

AGENT_OPTIONS = ('osd_agent_max_ops', 'osd_agent_max_low_ops')
# Ceph's defaults, for an option the database does not answer for.
AGENT_DEFAULTS = {'osd_agent_max_ops': 4, 'osd_agent_max_low_ops': 2}

# (entity, option name) -> the option's value, or None when not known.
OptionReader = Callable[[str, str], Optional[float]]


def agent_stopped(entity: str, read: OptionReader) -> str:
    """Why the entity's (`osd.N`) tier agent does nothing, or ''."""
    zero = []
    for name in AGENT_OPTIONS:
        v = read(entity, name)
        if v is not None and v <= 0:
            zero.append(f'{name} {v:g}')
    if not zero:
        return ''
    return f'{" and ".join(zero)} for {entity}'


def agents_stopped(entities: Mapping[int, str], read: OptionReader) -> Dict[int, str]:
    """Per cache pool (its entity: the first OSD of its CRUSH rule, whose
    settings the mon's database gives as it would to that OSD), why its
    agent does nothing; pools whose agent runs are left out.  Each entity
    is read once."""
    by_entity: Dict[str, str] = {}
    out: Dict[int, str] = {}
    for pid, entity in entities.items():
        if entity not in by_entity:
            by_entity[entity] = agent_stopped(entity, read)
        if by_entity[entity]:
            out[pid] = by_entity[entity]
    return out


def with_agent_stopped(tiers: Mapping[int, CacheTier],
                       stopped: Mapping[int, str]) -> Dict[int, CacheTier]:
    """tiers with each pool's agent_stopped (the same CacheTier where it did
    not change: SeriesCache follows it by identity)."""
    return {pid: t if t.agent_stopped == stopped.get(pid, '')
            else dataclasses.replace(t, agent_stopped=stopped.get(pid, ''))
            for pid, t in tiers.items()}
