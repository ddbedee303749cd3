"""agent_config: when the cache OSDs' tier agent may run no ops."""

import mgr_stub  # noqa: F401  (mgr_module for the package)
from tiertune.agent_config import agent_stopped, agents_stopped, with_agent_stopped
from tiertune.topology import cache_tiers


def reader(values):
    asked = []

    def read(entity, name):
        asked.append((entity, name))
        return values.get((entity, name))
    return read, asked


def test_either_limit_at_zero_stops_the_agent():
    read, _ = reader({})
    assert agent_stopped('osd.0', read) == ''             # not answered: Ceph's defaults
    read, _ = reader({('osd.0', 'osd_agent_max_ops'): 4.0,
                      ('osd.0', 'osd_agent_max_low_ops'): 2.0})
    assert agent_stopped('osd.0', read) == ''
    read, _ = reader({('osd.0', 'osd_agent_max_ops'): 0.0})
    assert agent_stopped('osd.0', read) == 'osd_agent_max_ops 0 for osd.0'
    read, _ = reader({('osd.0', 'osd_agent_max_ops'): 0.0,
                      ('osd.0', 'osd_agent_max_low_ops'): 0.0})
    assert agent_stopped('osd.0', read) == \
        'osd_agent_max_ops 0 and osd_agent_max_low_ops 0 for osd.0'


def test_each_entity_is_read_once_a_call():
    read, asked = reader({('osd.2', 'osd_agent_max_low_ops'): 0.0})
    out = agents_stopped({1: 'osd.0', 2: 'osd.2', 3: 'osd.2', 4: 'osd.0'}, read)
    assert out == {2: 'osd_agent_max_low_ops 0 for osd.2',
                   3: 'osd_agent_max_low_ops 0 for osd.2'}
    assert len(asked) == 4          # two entities, two options each


def test_an_unchanged_tier_stays_the_same_object(burst):
    (t,) = cache_tiers(burst['samples'][0]['inputs']['osd_map']).values()
    same = with_agent_stopped({1: t}, {})
    assert same[1] is t
    stopped = with_agent_stopped({1: t}, {1: 'osd_agent_max_ops 0 for osd'})
    assert stopped[1].agent_stopped == 'osd_agent_max_ops 0 for osd'
    assert with_agent_stopped(stopped, {1: 'osd_agent_max_ops 0 for osd'})[1] is stopped[1]
