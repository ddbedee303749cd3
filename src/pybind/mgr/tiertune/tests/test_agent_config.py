"""agent_config: when the cache OSDs' tier agent may run no ops, or only
on one side of dirty_high."""

import mgr_stub  # noqa: F401  (mgr_module for the package)
from tiertune.agent_config import agent_ops, agents_ops, with_agent_ops
from tiertune.topology import cache_tiers

MAX, LOW = 'osd_agent_max_ops', 'osd_agent_max_low_ops'


def reader(values):
    asked = []

    def read(entity, name):
        asked.append((entity, name))
        return values.get((entity, name))
    return read, asked


def test_both_limits_at_zero_stop_the_agent_one_limits_it():
    read, _ = reader({})
    assert agent_ops('osd.0', read) == ('', '')         # not answered: Ceph's defaults
    read, _ = reader({('osd.0', MAX): 4.0, ('osd.0', LOW): 2.0})
    assert agent_ops('osd.0', read) == ('', '')
    read, _ = reader({('osd.0', MAX): 0.0, ('osd.0', LOW): 0.0})
    assert agent_ops('osd.0', read) == \
        ('osd_agent_max_ops 0 and osd_agent_max_low_ops 0 for osd.0', '')
    # One at 0: the agent runs on one side of dirty_high only, which the
    # law still moves (a hold would stop it lowering dirty_high).
    read, _ = reader({('osd.0', LOW): 0.0})
    stopped, limited = agent_ops('osd.0', read)
    assert stopped == '' and limited.startswith(
        'osd_agent_max_low_ops 0 for osd.0: the agent runs only while a PG of the OSD '
        'flushes HIGH')
    read, _ = reader({('osd.0', MAX): -1.0})
    stopped, limited = agent_ops('osd.0', read)
    assert stopped == '' and limited.startswith(
        'osd_agent_max_ops -1 for osd.0: the agent stops on an OSD once a PG there flushes HIGH')


def test_each_entity_is_read_once_a_call():
    read, asked = reader({('osd.2', MAX): 0.0, ('osd.2', LOW): 0.0})
    out = agents_ops({1: 'osd.0', 2: 'osd.2', 3: 'osd.2', 4: 'osd.0'}, read)
    assert set(out) == {2, 3}
    assert out[2][0] == 'osd_agent_max_ops 0 and osd_agent_max_low_ops 0 for osd.2'
    assert len(asked) == 4          # two entities, two options each


def test_an_unchanged_tier_stays_the_same_object(burst):
    (t,) = cache_tiers(burst['samples'][0]['inputs']['osd_map']).values()
    assert with_agent_ops({1: t}, {})[1] is t
    stopped = with_agent_ops({1: t}, {1: ('osd_agent_max_ops 0 ...', '')})
    assert stopped[1].agent_stopped == 'osd_agent_max_ops 0 ...'
    assert with_agent_ops(stopped, {1: ('osd_agent_max_ops 0 ...', '')})[1] is stopped[1]
    assert with_agent_ops(stopped, {})[1].agent_stopped == ''
