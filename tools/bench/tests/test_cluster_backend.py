"""The cluster backend on a real local cluster: a short scenario
(cluster-smoke.yaml, 50 s of IO) under a static policy gives a complete,
sane record, and the cluster is gone afterwards.  Figures are not asserted:
this tests the harness, not Ceph.

Needs root and Debian's Ceph packages and fio (`make check` installs them);
the cluster start is about a minute, the whole test about two.
"""

import math
import subprocess
import sys
from pathlib import Path
from typing import List

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import cluster_backend  # noqa: E402
import full_spells  # noqa: E402
import scenario as scn  # noqa: E402
from record import METRIC_KEYS, OPTIONAL_METRIC_KEYS, SERIES_KEYS, RunRecord  # noqa: E402

from localcluster import processes  # noqa: E402

SMOKE = HERE / 'cluster-smoke.yaml'


@pytest.mark.timeout(600, method='thread')
def test_static_run_gives_a_complete_record_and_stops_its_cluster(tmp_path: Path) -> None:
    sc = scn.load(SMOKE)
    lines: List[str] = []
    # no start-up rados bench of the tiers: it adds 20 s and nothing to check
    rec = cluster_backend.run(sc, 'static:0.4,0.6,0.8', tmp_path, log=lines.append,
                              cluster_overrides={'bench_seconds': '0'}, pg_trace=True)

    # the record is complete and survives a round trip through its file
    assert rec.backend == 'cluster' and rec.scenario == 'cluster-smoke'
    assert rec.policy == 'static:0.4,0.6,0.8'
    assert set(rec.metrics) == set(METRIC_KEYS) | set(OPTIONAL_METRIC_KEYS)
    assert rec.metrics['write_lat_ms_p99_after_first'] is None     # one repeat
    rec.write(tmp_path / 'rec.json')
    assert RunRecord.read(tmp_path / 'rec.json').metrics == rec.as_dict()['metrics']
    m = rec.metrics
    for key in ('throughput_mib_s_mean', 'write_lat_ms_p50', 'write_lat_ms_p99',
                'write_lat_ms_p999', 'write_lat_ms_max', 'read_lat_ms_p99', 'hit_ratio'):
        assert m[key] is not None and math.isfinite(m[key]), key

    # sane, whatever the figures
    assert m['throughput_mib_s_mean'] > 0
    assert m['throughput_mib_s_min'] >= 0
    assert m['throughput_mib_s_stddev'] >= 0
    assert 0 < m['write_lat_ms_p50'] <= m['write_lat_ms_p99'] <= m['write_lat_ms_p999'] \
        <= m['write_lat_ms_max']
    assert m['read_lat_ms_p99'] > 0
    assert m['flushed_bytes'] >= 0 and m['promotes'] >= 0
    assert 0 <= m['hit_ratio'] <= 1
    assert 0 <= m['blocked_write_s'] <= rec.params['run_s']
    assert m['ratio_changes'] == 0          # static: the pool kept its ratios
    assert rec.ratio_changes == [{'t': 0.0, 'dirty': 0.4, 'dirty_high': 0.6, 'full': 0.8}]

    # one series row per second of the run, levels as fractions of the target
    s = rec.series
    assert tuple(s) == SERIES_KEYS
    n = len(s['t'])
    assert n >= 45 and all(len(v) == n for v in s.values())
    assert s['t'] == sorted(s['t'])
    assert max(s['throughput_mib_s']) > 0
    assert any(v is not None for v in s['write_lat_ms_p99'])
    assert all(v is not None and 0 <= v < 5 for v in s['dirty'] + s['fill'])

    # the phases ran with the tools the scenario calls for, in order
    phases = rec.params['phases']
    assert [(p['name'], p['tool']) for p in phases] == [
        ('burst', 'fio'), ('idle', 'sleep'), ('hot-mixed', 'fio')]
    assert '--rw=randwrite' in phases[0]['argv'] and '--ioengine=rbd' in phases[0]['argv']
    assert '--rwmixread=80' in phases[2]['argv'] and 'zipf:0.99' in phases[2]['argv']
    # the per-op logs and fio's own totals count the same ops
    fio_ops = sum(p['summary'].get(d, {}).get('ios', 0) for p in phases for d in ('read', 'write'))
    assert fio_ops == rec.params['client_ops'] > 0
    assert rec.params['sampler']['samples'] >= 45

    # the per-PG trace: every cache PG in every sample, and the burst's
    # dirty objects in it; full_spells.py reads it
    trace = rec.params['pg_trace']
    assert trace['fields'] == list(cluster_backend.PG_TRACE_FIELDS)
    assert len(trace['samples']) == rec.params['sampler']['samples']
    assert all(len(pgs) == 8 for _, pgs in trace['samples'])
    i_dirty = trace['fields'].index('num_objects_dirty')
    assert max(v[i_dirty] for _, pgs in trace['samples'] for v in pgs.values()) > 0
    # ... and the pool's counters beside it: the burst's writes move them
    # (its flushes may not have begun in so short a run: never backwards)
    assert trace['pool_fields'] == list(cluster_backend.POOL_TRACE_FIELDS)
    assert len(trace['pool_samples']) == rec.params['sampler']['samples']
    first, last = trace['pool_samples'][0][1], trace['pool_samples'][-1][1]
    i_write, i_flush = (trace['pool_fields'].index(k) for k in ('num_write', 'num_flush'))
    assert last[i_write] > first[i_write] and last[i_flush] >= first[i_flush]
    summary = full_spells.cluster_summary(RunRecord.read(tmp_path / 'rec.json'))
    assert summary.budget == 4 and summary.full_pg_s >= 0

    # the cluster was stopped: its daemons are gone, its directory removed
    pids = rec.params['cluster_pids']
    assert {'mon.a', 'mgr.x', 'osd.0'} <= set(pids)
    cluster_dir = rec.params['cluster_dir']
    assert not [p for p in pids.values() if processes.is_ours(int(p), cluster_dir)]
    assert not Path(cluster_dir).exists()
    assert any('cluster stopped' in line for line in lines)


@pytest.mark.timeout(600, method='thread')
def test_no_tier_run_sends_the_clients_io_to_the_base_pool(tmp_path: Path) -> None:
    # The OSiRIS "without the cache tier": the overlay goes, the pools stay.
    rec = cluster_backend.run(scn.load(SMOKE), 'no-tier', tmp_path,
                              cluster_overrides={'bench_seconds': '0'})
    assert rec.policy == 'no-tier'
    assert rec.params['tiertune'] == {'mode': 'off', 'overlay': 'removed'}
    m = rec.metrics
    assert m['throughput_mib_s_mean'] > 0 and rec.params['client_ops'] > 0
    counters = rec.params['pool_counters_delta']
    # The cache served no client op.  (Two clean-clone runs saw 2 writes,
    # then 3 promotions, in the cache pool: the image was made through the
    # tier just before, and the OSDs reported it after the run's first
    # counters.  The overlay now goes before the image is made.)
    assert counters['cache']['num_read'] == 0 and counters['cache']['num_write'] == 0
    assert counters['base']['num_write'] > 0
    assert m['flushed_bytes'] == 0 and m['promotes'] == 0 and m['hit_ratio'] == 0
    assert m['blocked_write_s'] == 0


def test_after_first_repeat_starts_at_the_second_repeats_actual_start() -> None:
    def phase(repeat: int, start: float) -> cluster_backend.PhaseRun:
        return cluster_backend.PhaseRun(name='p', op='write', repeat=repeat, tool='fio',
                                        scheduled_s=start, start_s=start + 0.5)
    t = np.array([1.0, 59.0, 60.4, 60.5, 130.0])
    one = [phase(0, 0.0), phase(0, 30.0)]
    assert not cluster_backend.after_first_repeat(one, t).any()
    two = [*one, phase(1, 60.0), phase(1, 90.0)]
    assert cluster_backend.after_first_repeat(two, t).tolist() == [
        False, False, False, True, True]


class _FakeClusterThatHangsOnce:
    """Pure logic of _create_image: the first `rbd create` times out (having
    created the image or not), as one did on a fresh cluster."""

    def __init__(self, created_by_the_hung_attempt: bool, info_hangs: int = 0) -> None:
        self.created = False
        self.hung = False
        self.made_by_hung = created_by_the_hung_attempt
        self.info_hangs = info_hangs      # how many `rbd info` calls time out first
        self.calls: List[str] = []

    def run(self, argv: List[str], check: bool = True,
            timeout: float = 120) -> 'subprocess.CompletedProcess[str]':
        self.calls.append(argv[1])
        if argv[1] == 'info':
            if self.info_hangs:
                self.info_hangs -= 1
                raise cluster_backend.ClusterError(f'timed out after {timeout}s: rbd info')
            return subprocess.CompletedProcess(argv, 0 if self.created else 2)
        if not self.hung:
            self.hung = True
            self.created = self.made_by_hung
            raise cluster_backend.ClusterError(f'timed out after {timeout}s: rbd create')
        if self.created:
            raise AssertionError('created twice')
        self.created = True
        return subprocess.CompletedProcess(argv, 0)


@pytest.mark.parametrize('made', [False, True])
def test_a_hung_image_create_is_tried_again_once_and_never_twice_made(made: bool) -> None:
    fake = _FakeClusterThatHangsOnce(created_by_the_hung_attempt=made)
    said: List[str] = []
    attempts = cluster_backend._create_image(fake, 'base', 1 << 30, 4 << 20,  # type: ignore[arg-type]
                                             said.append)
    assert fake.created
    assert attempts == (1 if made else 2)
    assert fake.calls == (['create', 'info'] if made else ['create', 'info', 'create'])
    assert len(said) == 1 and 'trying again' in said[0]


@pytest.mark.parametrize('made', [False, True])
def test_a_hung_question_whether_the_image_exists_costs_one_attempt(made: bool) -> None:
    fake = _FakeClusterThatHangsOnce(created_by_the_hung_attempt=made, info_hangs=1)
    said: List[str] = []
    attempts = cluster_backend._create_image(fake, 'base', 1 << 30, 4 << 20,  # type: ignore[arg-type]
                                             said.append)
    assert fake.created
    assert attempts == (2 if made else 3)
    assert fake.calls == (['create', 'info', 'info'] if made
                          else ['create', 'info', 'info', 'create'])
    assert len(said) == 2 and 'rbd info' in said[1]


def test_image_create_gives_up_after_its_attempts() -> None:
    fake = _FakeClusterThatHangsOnce(created_by_the_hung_attempt=False,
                                     info_hangs=cluster_backend.IMAGE_CREATE_ATTEMPTS)
    with pytest.raises(cluster_backend.ClusterError, match='rbd info'):
        cluster_backend._create_image(fake, 'base', 1 << 30, 4 << 20,  # type: ignore[arg-type]
                                      lambda _: None)
    assert not fake.created
