"""The eviction-rate measurement's arithmetic (pure: no cluster here; the
measurement itself needs one and is run by hand, see its docstring)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import evict_rate as er

# The OSD map reaches the OSDs after a second; 300 evicted by 1.5 s, 900 by
# 2 s, then nothing more: the agent stopped at the full ratio.
SAMPLES = [{'t': t, 'tier_evict': n, 'agent_wake': n / 4}
           for t, n in ((0.5, 0.0), (1.0, 0.0), (1.5, 300.0), (2.0, 900.0), (2.5, 900.0),
                        (3.0, 900.0))]


def test_rate_from_the_ratio_set_counts_the_map_delay_and_stops_at_the_last_eviction() -> None:
    assert er.evict_rate(SAMPLES, osds=2) == 900 / 2.0 / 2


def test_rate_under_way_spans_the_last_sample_with_none_to_the_first_with_all() -> None:
    assert er.running_rate(SAMPLES, osds=2) == 900 / (2.0 - 1.0) / 2
    at_once = [{'t': 1.3, 'tier_evict': 300.0}, {'t': 1.8, 'tier_evict': 300.0}]
    assert er.running_rate(at_once, osds=1) == 300 / 1.3     # from the ratio set
    assert er.evict_rate([{'t': 1.0, 'tier_evict': 0.0}], osds=1) is None
    assert er.running_rate([{'t': 1.0, 'tier_evict': 0.0}], osds=1) is None
    assert er.running_rate([], osds=1) is None


def test_report_prints_each_sample_and_both_rates() -> None:
    run = {'full': 0.05, 'objects': 1000, 'object_bytes': 64 << 10, 'target': 1 << 30,
           'osds': 2, 'samples': SAMPLES}
    text = er.report(run)
    assert '1000 clean objects of 64 KiB in a 1024 MiB target over 2 cache OSDs' in text
    lines = text.splitlines()
    assert lines[-3].endswith(' 225') and lines[-2].endswith(' 450')
    assert lines[-1].endswith('call: 4.00')


def test_a_sample_sums_the_osds_and_keeps_each_ones_evictions_and_delays() -> None:
    zero = dict.fromkeys(er.COUNTERS, 0)
    start = {0: dict(zero), 1: dict(zero, tier_evict=10)}
    now = {0: dict(zero, tier_evict=30, agent_wake=8), 1: dict(zero, tier_evict=10, tier_delay=1)}
    s = er.sample(1.5, start, now)
    assert (s['t'], s['tier_evict'], s['agent_wake'], s['tier_delay']) == (1.5, 30.0, 8.0, 1.0)
    assert s['evict_by_osd'] == [30.0, 0.0] and s['delay_by_osd'] == [0.0, 1.0]
    run = {'full': 0.05, 'objects': 40, 'object_bytes': 4 << 20, 'osds': 2, 'samples': [s]}
    assert '30/0, 0/1' in er.report(run)
