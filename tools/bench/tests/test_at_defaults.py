"""at_defaults.py and the tiertune-defaults policy: the module runs at its
own defaults there (its tick and its knobs, read from the module, not
copied), everything else as the suite's tiertune, and the report lays the
columns out (simulator, on a short read scenario)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import at_defaults
import policies
from short_reads import SHORT_READS
from simulator.run import LEAD_IN_TICKS, simulate


def test_the_defaults_policy_is_the_modules_own_defaults() -> None:
    # options.py declares mgr_module Options: the unit tests' stub
    # ceph_module lets mgr_module import (as module_cost.py does).
    tests = Path(__file__).resolve().parents[3] / 'src' / 'pybind' / 'mgr' / 'tiertune' / 'tests'
    sys.path.insert(0, str(tests))
    import mgr_stub  # noqa: F401
    tt = policies.tiertune_package()
    import importlib
    options = importlib.import_module('tiertune.options')
    (sleep,) = [o for o in options.OPTIONS if o['name'] == 'sleep_interval']
    assert policies.DEFAULTS_CONFIG.sleep_interval_s == sleep['default']
    assert dict(policies.DEFAULTS_CONFIG.settings) == {}
    knobs = tt['bounds'].Knobs()
    # What makes the two tiertune columns differ: the rate limit and the tick.
    assert knobs.min_interval_s == 600.0
    assert policies.BENCH_CONFIG.settings == {'min_interval_s': 0.0}
    assert policies.BENCH_CONFIG.sleep_interval_s == policies.TIERTUNE_SLEEP_INTERVAL_S


def test_the_defaults_policy_ticks_at_30_s_with_the_default_rate_limit() -> None:
    rec = simulate(SHORT_READS, policies.parse('tiertune-defaults'), seed=0)
    bench = simulate(SHORT_READS, policies.parse('tiertune'), seed=0)
    assert rec.policy == 'tiertune-defaults'
    assert rec.params['tiertune_sleep_interval_s'] == 30.0
    assert rec.params['tiertune_lead_in_s'] == LEAD_IN_TICKS * 30.0
    assert rec.params['tiertune_settings'] == {}
    assert bench.params['tiertune_sleep_interval_s'] == 10.0
    assert bench.params['tiertune_settings'] == {'min_interval_s': 0.0}
    # Changes only on its ticks: every change time is a multiple of 30 s.
    assert all(c['t'] % 30.0 == 0 for c in rec.ratio_changes)
    # Ceph-default static runs keep reporting the suite's tiertune settings.
    static = simulate(SHORT_READS, policies.parse('static:0.4,0.6,0.8'), seed=0)
    assert static.params['tiertune_sleep_interval_s'] == 10.0


def test_the_defaults_policy_is_refused_on_the_cluster_backend() -> None:
    import cluster_backend
    with pytest.raises(policies.PolicyError):
        cluster_backend.run(SHORT_READS, 'tiertune-defaults', Path('/nonexistent'))


def test_the_report_puts_both_tiertune_columns_beside_the_defaults_and_the_pick() -> None:
    res = at_defaults.measure([SHORT_READS], jobs=1)
    ((sc, pick, figs),) = res
    assert list(figs) == [name for name, _ in at_defaults.COLUMNS]
    assert figs['tiertune, module defaults'] == at_defaults.figures(SHORT_READS,
                                                                    'tiertune-defaults')
    assert figs['best-static pick'] == at_defaults.figures(SHORT_READS, pick)
    text = at_defaults.report(res, ['--scenarios', 'short-reads'])
    assert '`tools/bench/at_defaults.py --scenarios short-reads`' in text
    (row,) = [ln for ln in text.splitlines() if ln.startswith('| short-reads')]
    assert row.count('|') == len(at_defaults.COLUMNS) + 2
    f = figs['tiertune, module defaults']
    assert row.endswith(f'| {f.primary:.4f} / {f.throughput:.1f} / {f.changes} |')
    (note,) = [ln for ln in text.splitlines() if ln.startswith('- short-reads')]
    best = figs['best-static pick'].primary
    for name in ('tiertune, bench settings', 'tiertune, module defaults'):
        verdict = 'PASS' if figs[name].primary >= best else 'FAIL'    # hit ratio
        assert f'{name} {verdict}' in note
