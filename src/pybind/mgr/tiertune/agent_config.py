"""Whether the cache OSDs' tier agent may do anything at all, as the mon's
config database sets its op limits.

The OSD's agent thread takes a PG only while its quota of agent ops in
flight is above zero: osd_agent_max_ops while a PG of the OSD flushes
HIGH, osd_agent_max_low_ops otherwise (OSDService::agent_entry).  Both at
0, it never does: the ratios tiertune moves do nothing, and a cache that
neither flushes nor evicts fills until writes to objects it lacks block
(seen on the local cluster: a write burst met a FULL PG and waited 10
minutes while the pool read as idle).  The pool holds (agent_stopped).
One at 0, the agent runs only on one side of dirty_high: the check says
so (agent_limited), and the law goes on (dirty_high is then what starts
or stops it).  Ceph raises no health check for it (notieragent, which
does the same, is an OSD map flag Ceph warns about).

Read every tick: `ceph config set` changes no OSD map.  A value set in an
OSD's ceph.conf or injected at runtime is not in the database, and not
seen.
"""

from typing import Callable, Dict, Mapping, Optional, Tuple

from .topology import CacheTier, with_fields

AGENT_OPTIONS = ('osd_agent_max_ops', 'osd_agent_max_low_ops')

# (entity, option name) -> the option's value, or None when not known.
OptionReader = Callable[[str, str], Optional[float]]
# What limits one pool's agent: (stopped, limited), each '' or why (see
# agent_ops).
AgentOps = Tuple[str, str]
_RUNS = ('', '')


def agent_ops(entity: str, read: OptionReader) -> AgentOps:
    """Why the entity's (`osd.N`) tier agent does nothing (both limits at
    0: it never takes a PG), or why it runs only part of the time (one of
    them at 0), as (stopped, limited); ('', '') when neither is at 0."""
    max_ops, low_ops = (read(entity, name) for name in AGENT_OPTIONS)
    no_max = max_ops is not None and max_ops <= 0
    no_low = low_ops is not None and low_ops <= 0
    if no_max and no_low:
        return (f'osd_agent_max_ops {max_ops:g} and osd_agent_max_low_ops {low_ops:g} for '
                f'{entity}'), ''
    if no_low:
        return '', (f'osd_agent_max_low_ops {low_ops:g} for {entity}: the agent runs only '
                    f'while a PG of the OSD flushes HIGH (dirty over dirty_high); under it, '
                    f'nothing is flushed or evicted')
    if no_max:
        return '', (f'osd_agent_max_ops {max_ops:g} for {entity}: the agent stops on an OSD '
                    f'once a PG there flushes HIGH (dirty over dirty_high), and nothing then '
                    f'flushes it back under')
    return _RUNS


def agents_ops(entities: Mapping[int, str], read: OptionReader) -> Dict[int, AgentOps]:
    """Per cache pool (its entity: the first OSD of its CRUSH rule, whose
    settings the mon's database gives as it would to that OSD), what
    limits its agent; pools whose agent runs unlimited are left out.  Each
    entity is read once."""
    by_entity: Dict[str, AgentOps] = {}
    out: Dict[int, AgentOps] = {}
    for pid, entity in entities.items():
        if entity not in by_entity:
            by_entity[entity] = agent_ops(entity, read)
        if by_entity[entity] != _RUNS:
            out[pid] = by_entity[entity]
    return out


def with_agent_ops(tiers: Mapping[int, CacheTier],
                   ops: Mapping[int, AgentOps]) -> Dict[int, CacheTier]:
    """tiers with each pool's agent_stopped and agent_limited (the same
    CacheTier where they did not change: SeriesCache follows it by
    identity)."""
    out = {}
    for pid, t in tiers.items():
        stopped, limited = ops.get(pid, _RUNS)
        out[pid] = with_fields(t, agent_stopped=stopped, agent_limited=limited)
    return out
