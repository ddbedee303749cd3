import pytest

from tiertune.progress import DRAIN_EVENT_MAX_S, DrainEvents


def ids():
    n = iter(range(100))
    return lambda: f'ev{next(n)}'


def test_lowering_below_the_current_level_starts_a_drain_event():
    d = DrainEvents(ids())
    calls = d.started(3, 'cache', dirty_now=0.35, old_ratio=0.4, new_ratio=0.1, mono=0.0)
    assert calls == [('update', 'ev0', {
        'ev_msg': 'tiertune: draining dirty data of cache pool cache (35% -> 10% of target)',
        'ev_progress': 0.0, 'refs': [('pool', 'cache')], 'add_to_ceph_s': False})]
    # half way, then done
    assert d.tick({3: 0.225}, {3: True}, 10.0)[0][2]['ev_progress'] == pytest.approx(0.5)
    assert d.tick({3: 0.09}, {3: True}, 20.0) == [('complete', 'ev0', {})]
    assert d.events == {}


def test_nothing_to_drain_or_raising_starts_nothing():
    d = DrainEvents(ids())
    assert d.started(3, 'cache', 0.05, 0.4, 0.1, 0.0) == []      # already below
    assert d.started(3, 'cache', 0.35, 0.3, 0.5, 0.0) == []      # raised
    assert d.started(3, 'cache', None, 0.4, 0.1, 0.0) == []      # no level known


def test_event_closes_when_pool_leaves_on_vanishes_or_times_out():
    for dirty, on, t in (({3: 0.3}, {3: False}, 1.0), ({}, {}, 1.0),
                         ({3: 0.3}, {3: True}, DRAIN_EVENT_MAX_S + 1)):
        d = DrainEvents(ids())
        d.started(3, 'cache', 0.35, 0.4, 0.1, 0.0)
        assert d.tick(dirty, on, t) == [('complete', 'ev0', {})]


def test_a_new_drain_replaces_the_old_event():
    d = DrainEvents(ids())
    d.started(3, 'cache', 0.35, 0.4, 0.3, 0.0)
    calls = d.started(3, 'cache', 0.32, 0.3, 0.1, 5.0)
    assert calls[0] == ('complete', 'ev0', {}) and calls[1][1] == 'ev1'
