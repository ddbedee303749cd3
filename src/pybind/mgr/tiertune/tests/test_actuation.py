import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tiertune.actuation import POOL_VARS, plan, to_micro
from tiertune.topology import MICRO, Ratios

VAR_TO_NAME = {v: k for k, v in POOL_VARS.items()}


def ordered(r: Ratios) -> bool:
    m = [to_micro(r.dirty), to_micro(r.dirty_high), to_micro(r.full)]
    return 0 <= m[0] <= m[1] <= m[2] <= MICRO


def apply(r: Ratios, var: str, value: float) -> Ratios:
    d = r.as_dict()
    d[VAR_TO_NAME[var]] = value
    return Ratios(**d)


def run(current: Ratios, target: Ratios):
    """Apply the plan command by command; every state along the way."""
    states = [current]
    for var, value in plan(current, target):
        states.append(apply(states[-1], var, value))
    return states


# Ratios as the mon could hold them (millionths) or as the controller might
# produce them (any float in 0..1), ordered.
ratio = st.one_of(st.integers(0, MICRO).map(lambda m: m / MICRO),
                  st.floats(0.0, 1.0, allow_nan=False),
                  st.sampled_from([0.0, 0.1, 0.3, 0.4, 0.6, 0.8, 1.0]))


@st.composite
def valid_ratios(draw):
    d, h, f = sorted(draw(st.lists(ratio, min_size=3, max_size=3)))
    return Ratios(d, h, f)


@given(valid_ratios(), valid_ratios())
@settings(max_examples=1500, database=None)
@example(Ratios(0.1, 0.2, 0.3), Ratios(0.7, 0.8, 0.9))
@example(Ratios(0.7, 0.8, 0.9), Ratios(0.1, 0.2, 0.3))
@example(Ratios(0.3, 0.5, 0.9), Ratios(0.45, 0.5, 0.5))
def test_plan_keeps_order_after_every_command(current, target):
    cmds = plan(current, target)
    states = run(current, target)
    assert all(ordered(s) for s in states), states
    final = states[-1]
    for name in ('dirty', 'dirty_high', 'full'):
        assert abs(getattr(final, name) - getattr(target, name)) <= 1e-6
    # No unchanged ratio is set, none is set twice, values have 6 decimals.
    names = [VAR_TO_NAME[v] for v, _ in cmds]
    assert len(names) == len(set(names)) <= 3
    for name in names:
        assert to_micro(getattr(current, name)) != to_micro(getattr(target, name))
    for _, value in cmds:
        assert value == round(value, 6) and 0.0 <= value <= 1.0
    for name in ('dirty', 'dirty_high', 'full'):
        if to_micro(getattr(current, name)) != to_micro(getattr(target, name)):
            assert name in names


@given(valid_ratios())
@example(Ratios(dirty=0.0, dirty_high=0.0, full=0.2577515021258713))
@settings(database=None)
def test_plan_same_is_empty(r):
    assert plan(r, r) == []
    # A target equal to what the mon stores for the current ratios (its
    # millionths) is no change.  (A fixed nudge such as 1e-8 is not: near a
    # half-millionth it rounds to the next stored value, and hypothesis found
    # full=0.2577515021258713, stored as 257752 while 1e-8 less is 257751.)
    stored = Ratios(*(to_micro(v) / MICRO for v in (r.dirty, r.dirty_high, r.full)))
    assert plan(r, stored) == []


@given(st.lists(ratio, min_size=3, max_size=3), st.lists(ratio, min_size=3, max_size=3))
@settings(max_examples=500, database=None)
def test_plan_reaches_target_even_from_misordered(cur, tgt):
    """A hand-set (misordered) pool or baseline: no order can keep the
    invariant throughout, but the plan still ends exactly at target."""
    current, target = Ratios(*cur), Ratios(*tgt)
    final = run(current, target)[-1]
    assert all(to_micro(getattr(final, n)) == to_micro(getattr(target, n))
               for n in ('dirty', 'dirty_high', 'full'))
    if ordered(current) and ordered(target):
        assert all(ordered(s) for s in run(current, target))


def names(cmds):
    return [VAR_TO_NAME[v] for v, _ in cmds]


def test_raise_all_goes_top_down():
    cmds = plan(Ratios(0.1, 0.2, 0.3), Ratios(0.4, 0.6, 0.8))
    assert cmds == [('cache_target_full_ratio', 0.8),
                    ('cache_target_dirty_high_ratio', 0.6),
                    ('cache_target_dirty_ratio', 0.4)]


def test_lower_all_goes_bottom_up():
    cmds = plan(Ratios(0.4, 0.6, 0.8), Ratios(0.1, 0.2, 0.3))
    assert names(cmds) == ['dirty', 'dirty_high', 'full']


def test_dirty_up_while_full_down():
    # dirty 0.3 -> 0.5 and full 0.8 -> 0.55, dirty_high unchanged at 0.5.
    cur, tgt = Ratios(0.3, 0.5, 0.8), Ratios(0.5, 0.5, 0.55)
    cmds = plan(cur, tgt)
    assert sorted(names(cmds)) == ['dirty', 'full']
    assert all(ordered(s) for s in run(cur, tgt))


def test_squeeze_needs_the_right_order():
    # dirty_high drops below the old dirty, dirty drops first.
    cur, tgt = Ratios(0.4, 0.6, 0.8), Ratios(0.2, 0.3, 0.8)
    assert names(plan(cur, tgt)) == ['dirty', 'dirty_high']
    # full drops below the old dirty_high: dirty_high first.
    cur, tgt = Ratios(0.4, 0.6, 0.8), Ratios(0.4, 0.5, 0.55)
    assert names(plan(cur, tgt)) == ['dirty_high', 'full']
    # Everything moves up past each other's old values.
    cur, tgt = Ratios(0.1, 0.15, 0.2), Ratios(0.25, 0.3, 0.9)
    assert names(plan(cur, tgt)) == ['full', 'dirty_high', 'dirty']


def test_values_rounded_to_micro():
    cmds = plan(Ratios(0.4, 0.6, 0.8), Ratios(0.4, 0.6, 0.3333333333))
    assert cmds == [('cache_target_full_ratio', 0.333333)]
    assert f'{cmds[0][1]:.6f}' == '0.333333'


def test_only_changed_ratios():
    assert plan(Ratios(0.4, 0.6, 0.8), Ratios(0.4, 0.6000004, 0.8)) == []
    assert plan(Ratios(0.4, 0.6, 0.8), Ratios(0.4, 0.65, 0.8)) == [
        ('cache_target_dirty_high_ratio', 0.65)]


@pytest.mark.parametrize('bad', [-0.1, 1.2, float('nan')])
def test_out_of_range_refused(bad):
    with pytest.raises(ValueError):
        plan(Ratios(0.4, 0.6, 0.8), Ratios(0.4, 0.6, bad))
    with pytest.raises(ValueError):
        plan(Ratios(bad, 0.6, 0.8), Ratios(0.4, 0.6, 0.8))


def test_misordered_endpoint_still_reaches_target():
    cur, tgt = Ratios(0.7, 0.5, 0.9), Ratios(0.3, 0.4, 0.6)
    assert run(cur, tgt)[-1] == Ratios(0.3, 0.4, 0.6)
    cur, tgt = Ratios(0.4, 0.6, 0.8), Ratios(0.7, 0.5, 0.9)   # misordered baseline
    final = run(cur, tgt)[-1]
    assert final == Ratios(0.7, 0.5, 0.9)


def test_a_reply_naming_the_pool_or_no_pool_is_no_error():
    from tiertune.actuation import pool_set_elsewhere
    # The reply as the real mon gives it (a real-cluster test holds it to
    # this form: test_the_mons_reply_to_osd_pool_set_names_the_pool_set_by_id).
    assert pool_set_elsewhere(5, 'set pool 5 cache_target_dirty_ratio to 0.400000') is None
    # A reply this code does not know: nothing to check, not a failure.
    assert pool_set_elsewhere(5, '') is None
    assert pool_set_elsewhere(5, 'pool cache set') is None


def test_a_reply_naming_another_pool_is_an_error_naming_both():
    from tiertune.actuation import pool_set_elsewhere
    err = pool_set_elsewhere(5, 'set pool 12 cache_target_dirty_ratio to 0.400000\n')
    assert err is not None and 'pool 12' in err and 'not pool 5' in err
