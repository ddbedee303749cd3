import dataclasses
import json
import math
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiertune.bounds import (
    BOUND_KEYS,
    KNOB_KEYS,
    OSD_AGENT_SLOP,
    RATIO_MAX,
    Bounds,
    Knobs,
    with_setting,
)
from tiertune.state import (
    DecisionRecord,
    Settings,
    history_from_json,
    history_to_store,
    settings_from_store,
)
from tiertune.topology import Ratios


def test_defaults_are_usable():
    assert Bounds().problem() is None and Knobs().problem() is None


@pytest.mark.parametrize('key,value,words', [
    ('dirty_ratio_min', 1.5, 'outside 0..1'),
    ('full_ratio_max', -0.1, 'outside 0..1'),
    # at or above 1 / 1.02 a PG would go from idle straight to FULL
    ('full_ratio_max', 0.99, 'above 0.98: with the agent\'s slop'),
    ('dirty_high_ratio_max', 1.0, 'above 0.98'),
    ('dirty_ratio_min', 0.7, 'dirty_ratio_min 0.7 is above dirty_ratio_max'),
    ('dirty_high_ratio_min', 0.95, 'above dirty_high_ratio_max'),
    ('deadband', OSD_AGENT_SLOP, 'wider than osd_agent_slop'),
    ('max_step', 0.0, 'max_step'),
    ('horizon_s', 0.0, 'must be positive'),
    ('no_such_key', 0.5, "unknown key 'no_such_key'"),
    ('dirty_ratio_min', float('nan'), 'outside 0..1'),
    ('horizon_s', float('nan'), 'must be a finite number'),
    ('min_interval_s', float('inf'), 'must be a finite number'),
])
def test_bad_settings_are_refused_naming_the_conflict(key, value, words):
    b, k = Bounds(), Knobs()
    nb, nk, problem = with_setting(b, k, key, value)
    assert problem is not None and words in problem


def test_ordering_impossible_is_refused():
    b = Bounds(dirty_ratio_min=0.5, dirty_ratio_max=0.6, dirty_high_ratio_min=0.3,
               dirty_high_ratio_max=0.4)
    assert 'dirty <= dirty_high is impossible' in b.problem()
    b = dataclasses.replace(Bounds(), dirty_high_ratio_min=0.85, dirty_high_ratio_max=0.9,
                            full_ratio_max=0.8)
    assert 'dirty_high <= full is impossible' in b.problem()


def test_a_good_setting_is_applied():
    nb, nk, problem = with_setting(Bounds(), Knobs(), 'dirty_ratio_min', 0.05)
    assert problem is None and nb.dirty_ratio_min == 0.05 and nk == Knobs()


unit = st.floats(min_value=0.0, max_value=1.0)


@given(st.tuples(*[unit] * 6))
def test_usable_bounds_always_admit_an_ordered_point(v):
    b = Bounds(*v)
    if b.problem() is None:
        d = b.dirty_ratio_min
        h = max(b.dirty_high_ratio_min, d)
        f = max(b.full_ratio_min, h)
        assert d <= h <= f and h <= b.dirty_high_ratio_max and f <= b.full_ratio_max


def test_settings_round_trip_through_json():
    s = Settings(mode='on')
    ps = s.pool(7)
    ps.mode = 'warn'
    ps.bounds = dataclasses.replace(Bounds(), dirty_ratio_min=0.05)
    ps.knobs = dataclasses.replace(Knobs(), max_step=0.3)
    ps.baseline = Ratios(0.4, 0.6, 0.8)
    ps.last_applied = Ratios(0.3, 0.6, 0.8)
    ps.last_change_wall = 1234.5
    ps.manual_change = 'changed by hand'
    back, problems = settings_from_store(s.to_json())
    assert back == s and problems == []
    assert back.effective_mode(7) == 'warn' and back.effective_mode(8) == 'on'


def test_empty_or_bad_settings_load_as_defaults():
    assert settings_from_store(None) == (Settings(), [])
    s, problems = settings_from_store('{"mode": "bogus", "pools": {"3": {"mode": "Off", '
                                      '"bounds": {"dirty_ratio_min": 0.2}}}}')
    # An unknown pool mode is warn, not the default (which may be on: it
    # may have meant off); the pool's other settings are kept; both said.
    assert s.mode == 'warn' and s.pools[3].mode == 'warn'
    assert s.pools[3].bounds.dirty_ratio_min == 0.2
    assert problems == ["default mode 'bogus' unknown; warn used",
                        "pool 3: mode 'Off' unknown; mode warn"]
    s, problems = settings_from_store('{"mode": "on", "pools": {"3": {"mode": null}}}')
    assert s.effective_mode(3) == 'on' and problems == []


def test_history_round_trip_and_bound():
    recs, unreadable = history_from_json(None)
    assert unreadable == 0
    for i in range(150):
        recs.append(DecisionRecord(time=float(i), pool='cache', mode='on',
                                   old=Ratios(0.4, 0.6, 0.8), new=Ratios(0.3, 0.6, 0.8),
                                   reason='idle', result='applied'))
    back, unreadable = history_from_json(history_to_store(recs))
    assert len(back) == 100 and list(back) == list(recs) and back[0].time == 50.0
    assert unreadable == 0


def test_an_unreadable_decision_leaves_the_others():
    good = DecisionRecord(time=1.0, pool='cache', mode='on', old=Ratios(0.4, 0.6, 0.8),
                          new=Ratios(0.3, 0.6, 0.8), reason='idle', result='applied')
    text = history_to_store(deque([good, good]))
    items = json.loads(text)
    del items[1]['new']['full']
    back, unreadable = history_from_json(json.dumps([*items, 'not a record']))
    assert list(back) == [good] and unreadable == 2
    with pytest.raises(ValueError):
        history_from_json('{"time": 1}')


def test_every_key_is_settable():
    for key in BOUND_KEYS + KNOB_KEYS:
        b, k = Bounds(), Knobs()
        cur = getattr(b, key) if key in BOUND_KEYS else getattr(k, key)
        _, _, problem = with_setting(b, k, key, cur)
        assert problem is None, key


# problem()'s first test passes exactly when none of its detailed checks
# fires: each value near the edges, including inf and NaN.
EDGY = st.one_of(st.sampled_from([0.0, 1.0, -0.0, 0.02, 0.05, 0.1, 0.5, 600.0, -1e-9,
                                  1.0 + 1e-9, math.inf, -math.inf, math.nan]),
                 st.floats(-0.5, 1.5), st.floats(-10.0, 1000.0))


def _bounds_checks(b):
    bad = [not 0.0 <= v <= RATIO_MAX for lo, hi in b.ranges() for v in (lo, hi)]
    bad += [lo > hi for lo, hi in b.ranges()]
    bad += [b.dirty_ratio_min > b.dirty_high_ratio_max, b.dirty_high_ratio_min > b.full_ratio_max,
            b.dirty_ratio_min > b.full_ratio_max]
    return any(bad)


def _knobs_checks(k):
    return (not all(math.isfinite(getattr(k, n)) for n in KNOB_KEYS) or k.horizon_s <= 0
            or k.min_interval_s < 0 or not 0.0 < k.max_step <= 1.0
            or not OSD_AGENT_SLOP < k.deadband < 1.0 or k.deadband > k.max_step)


@given(st.lists(EDGY, min_size=6, max_size=6))
def test_bounds_problem_is_none_exactly_when_no_check_fails(v):
    b = Bounds(*v)
    assert (b.problem() is None) == (not _bounds_checks(b))


@given(st.lists(EDGY, min_size=4, max_size=4))
def test_knobs_problem_is_none_exactly_when_no_check_fails(v):
    k = Knobs(*v)
    assert (k.problem() is None) == (not _knobs_checks(k))


def test_stored_settings_keep_only_what_was_set_and_read_back_the_same() -> None:
    import json

    from tiertune.bounds import Bounds, Knobs
    from tiertune.state import PoolState, Settings, settings_from_store
    s = Settings(mode='on')
    s.pool(1)                                       # touched, nothing set
    s.pool(2).bounds = dataclasses.replace(Bounds(), dirty_ratio_min=0.2)
    s.pool(3).knobs = dataclasses.replace(Knobs(), max_step=0.2)
    s.pool(4).mode = 'off'
    stored = json.loads(s.to_json())
    assert set(stored['pools']) == {'2', '3', '4'}
    assert stored['pools']['2']['bounds'] == {'dirty_ratio_min': 0.2}
    assert stored['pools']['2']['knobs'] == {} and stored['pools']['3']['bounds'] == {}
    back, problems = settings_from_store(s.to_json())
    assert problems == [] and back.mode == 'on'
    assert {k: v for k, v in s.pools.items() if v != PoolState()} == back.pools
    # 200 pools with their own bounds, modes and a change each stay well
    # inside the mon's 64 KiB.
    from tiertune.topology import Ratios
    for pid in range(100, 300):
        ps = s.pool(pid)
        ps.mode, ps.bounds = 'on', dataclasses.replace(Bounds(), full_ratio_max=0.85)
        ps.baseline = ps.last_applied = Ratios(0.4, 0.6, 0.8)
        ps.last_change_wall = 1795277199.9446778
    assert len(s.to_json()) < 64 * 1024


def test_settings_over_the_mons_limit_are_stored_compressed_and_read_back():
    """About 270 bytes of JSON a pool: a few hundred cache pools with
    settings of their own passed the mon's 64 KiB for one value, and the
    store kept an older copy.  Over the limit the text is compressed."""
    import json

    from tiertune.state import PlannedChange, PoolState, settings_to_store
    limit = 64 * 1024
    s = Settings(mode='on')
    small = settings_to_store(s, limit)
    assert small == s.to_json()                 # plain JSON while it fits
    for pid in range(1000, 2000):
        r = Ratios(0.1 + (pid % 37) / 100, 0.5 + (pid % 13) / 100, 0.9)
        s.pools[pid] = PoolState(mode='on', baseline=Ratios(0.4, 0.6, 0.8), last_applied=r,
                                 last_change_wall=1.8e9 + pid * 7.123,
                                 planned=PlannedChange((Ratios(0.4, 0.6, 0.8), r), 1.8e9 + pid))
    assert len(s.to_json()) > 4 * limit
    text = settings_to_store(s, limit)
    assert len(text) <= limit and set(json.loads(text)) == {'zlib'}
    back, problems = settings_from_store(text)
    assert back == s and problems == []
    # a damaged compressed text is unreadable, not a crash: the defaults
    for bad in ('{"zlib": "!!"}', '{"zlib": "eJw="}'):
        back, problems = settings_from_store(bad)
        assert back == Settings() and problems, bad


def test_bounds_stored_above_the_limit_are_read_at_it_and_said():
    """An earlier version accepted bounds up to 1.0; now `set` refuses them,
    and two of them stored would each block `set` from mending the other."""
    s, problems = settings_from_store('{"mode": "on", "pools": {"3": {"bounds": '
                                      '{"dirty_high_ratio_max": 1.0, "full_ratio_min": 0.99, '
                                      '"full_ratio_max": 1.0}}}}')
    b = s.pools[3].bounds
    assert (b.dirty_high_ratio_max, b.full_ratio_min, b.full_ratio_max) == (0.98, 0.98, 0.98)
    assert b.problem() is None and s.pools[3].mode is None
    assert problems == ['pool 3: bound(s) dirty_high_ratio_max, full_ratio_min, full_ratio_max '
                        'above 0.98 read as 0.98']


@pytest.mark.parametrize('field, value', [
    ('bounds', {'full_ratio_max': math.nan}), ('bounds', {'dirty_ratio_min': -0.5}),
    ('bounds', {'full_ratio_max': 1.5}), ('knobs', {'horizon_s': math.inf}),
    ('knobs', {'max_step': math.nan})])
def test_a_stored_bound_or_knob_no_set_accepts_is_its_default_and_the_pool_warns(field, value):
    """Corruption (a hand `config-key set`; Python's json reads NaN), not a
    setting: the field's default, the pool in warn (off stays off), said."""
    text = json.dumps({'mode': 'on', 'pools': {'3': {'mode': 'on', field: value},
                                               '4': {'mode': 'off', field: value}}})
    s, problems = settings_from_store(text)
    (key,) = value
    default = {'bounds': Bounds(), 'knobs': Knobs()}[field]
    for pid, mode in ((3, 'warn'), (4, 'off')):
        ps = s.pools[pid]
        assert getattr(getattr(ps, field), key) == getattr(default, key)
        assert ps.mode == mode and ps.bounds.problem() is None and ps.knobs.problem() is None
    assert len(problems) == 2 and all(f'{key} ' in p and 'unusable' in p for p in problems)


@pytest.mark.parametrize('ratios', [{'dirty': 1.5, 'dirty_high': 0.6, 'full': 0.8},
                                    {'dirty': 0.4, 'dirty_high': math.nan, 'full': 0.8},
                                    {'dirty': 0.4, 'dirty_high': 0.6, 'full': -0.1}])
def test_stored_ratios_that_are_no_ratios_make_the_pool_entry_unreadable(ratios):
    for where in ('baseline', 'last_applied'):
        s, problems = settings_from_store(json.dumps({'pools': {'3': {where: ratios}}}))
        assert s.pools[3].mode == 'warn' and getattr(s.pools[3], where) is None
        assert len(problems) == 1 and 'not a ratio in 0..1' in problems[0]
