"""tick_cost.TickCosts: the figures `status` shows for tiertune's own ticks."""

from tiertune.tick_cost import TICKS_KEPT, StepClock, TickCosts, tick_line


def test_nothing_before_the_first_tick() -> None:
    c = TickCosts()
    assert c.summary() is None
    assert tick_line(c.summary()) == 'tiertune has not ticked yet'


def test_last_median_and_max_over_the_ticks_kept() -> None:
    c = TickCosts()
    c.record(0.050, 0.5, 3)      # slides out below
    for i in range(TICKS_KEPT):
        c.record(0.001 * (i + 1), 0.002 * (i + 1), 64)
    s = c.summary()
    assert s is not None
    assert s['ticks'] == TICKS_KEPT and s['cache_pools'] == 64
    assert s['cpu_ms_last'] == TICKS_KEPT * 1.0 and s['wall_ms_last'] == TICKS_KEPT * 2.0
    assert s['cpu_ms_max'] == TICKS_KEPT * 1.0        # the 50 ms tick is gone
    assert abs(s['cpu_ms_median'] - (TICKS_KEPT + 1) / 2) < 1e-9
    assert tick_line(s) == (f'last tick: 20.0 ms CPU, 40.0 ms wall, 64 cache pools; median of the '
                        f'last {TICKS_KEPT}: 10.5 ms CPU (max 20.0)')


def test_one_pool_and_clock_noise() -> None:
    c = TickCosts()
    c.record(-1e-9, 0.003, 1)    # a clock read back to front counts as 0
    s = c.summary()
    assert s is not None and s['cpu_ms_last'] == 0.0
    assert '1 cache pool;' in tick_line(s)


def test_each_step_is_the_median_over_the_ticks_that_reached_it() -> None:
    c = TickCosts()
    c.record(0.004, 0.004, 2, {'pool_stats': 0.001, 'models_and_law': 0.002})
    c.record(0.001, 0.001, 2, {'pool_stats': 0.003})      # failed after sampling
    c.record(0.006, 0.006, 2, {'pool_stats': 0.002, 'models_and_law': 0.004})
    s = c.summary()
    assert s is not None
    parts = s['cpu_ms_median_parts']
    assert set(parts) == {'pool_stats', 'models_and_law'}
    assert abs(parts['pool_stats'] - 2.0) < 1e-9 and abs(parts['models_and_law'] - 3.0) < 1e-9


def test_a_failed_last_tick_hides_no_step_the_others_reached() -> None:
    c = TickCosts()
    c.record(0.004, 0.004, 2, {'pool_stats': 0.001, 'models_and_law': 0.002})
    c.record(0.001, 0.001, 2, {'pool_stats': 0.003})      # the newest failed after sampling
    s = c.summary()
    assert s is not None
    assert list(s['cpu_ms_median_parts']) == ['pool_stats', 'models_and_law']
    assert abs(s['cpu_ms_median_parts']['models_and_law'] - 2.0) < 1e-9


def test_step_clock_splits_consecutive_steps() -> None:
    parts: dict = {}
    clock = StepClock(parts)
    sum(i * i for i in range(200_000))
    clock.mark('busy')
    clock.mark('idle')
    assert list(parts) == ['busy', 'idle'] and parts['busy'] > parts['idle'] >= 0
