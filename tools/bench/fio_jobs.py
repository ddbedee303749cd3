"""One scenario phase as a fio or rados bench command line, and what their
outputs say: every completed op with its completion time, latency and size.

Keys are the objects 0..count-1 of one RBD image (object size = the
scenario's), shared by all phases as in the simulator: a phase over `count`
keys does its IO in the image's first count x object_size bytes.

fio (rbd ioengine) runs every phase fio can express:
  write / read / mixed   -> rw=randwrite / randread / randrw (rwmixread = the
                            read fraction in percent); sequential keys ->
                            rw=write / read / rw
  threads                -> iodepth (one job: one client with that many ops in
                            flight; several jobs on one image would contend
                            for the image's lock)
  block_size             -> bs; rate_mib_s -> rate (for mixed: split by the
                            read fraction, rate=R*f,R*(1-f))
  keys uniform / zipf    -> random_distribution=random / zipf:theta, with
                            norandommap (ops pick keys independently); fio
                            ranks block_size blocks, not objects, and
                            scatters the ranks over the range by a hash: with
                            bs < object size an object's popularity is the
                            sum of its blocks' (flatter than a zipf over
                            objects).  fio cannot rank whole objects for
                            smaller IOs: blockalign with zipf yields offsets
                            past the range and no IO at all (seen, fio 3.33).
  duration               -> time_based runtime
fio logs every op's total latency (submission + completion, ns) with
log_avg_msec=0 and Unix-epoch timestamps (ms, when fio reaped the
completion).

rados bench runs sequential whole-object writes at full speed (what the
OSiRIS test ran): `rados bench write` writes new objects
(benchmark_data_*) in the base pool through the overlay, not the image.  It
reports per-second completions and a latency summary (average, max), not
per-op latencies.
"""

import json
import re
import subprocess
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from scenario import Phase, rados_bench_can_run


@dataclass(frozen=True)
class Image:
    pool: str
    name: str
    object_size: int
    client: str = 'admin'


@dataclass
class Ops:
    """Completed ops: one row per op (fio), or per second of ops (rados
    bench, latency NaN: not reported per op)."""
    t: np.ndarray          # completion, Unix epoch seconds
    lat_s: np.ndarray      # latency, seconds (NaN: unknown)
    nbytes: np.ndarray     # bytes moved
    ops: np.ndarray        # ops in the row
    write: np.ndarray      # bool: a write (else a read)

    @classmethod
    def empty(cls) -> 'Ops':
        z = np.zeros(0)
        return cls(t=z, lat_s=z, nbytes=z, ops=z, write=np.zeros(0, dtype=bool))

    @classmethod
    def concat(cls, parts: List['Ops']) -> 'Ops':
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ('t', 'lat_s', 'nbytes', 'ops', 'write')))


def uses_rados_bench(ph: Phase, object_size: int) -> bool:
    """The phase's `tool`, or by default rados bench where it can run the
    phase (sequential whole-object writes at full speed: what the OSiRIS
    site ran), else fio.  With a rate, fio (rados bench has no rate limit);
    `tool: fio` for per-op latencies (rados bench reports their mean and
    max only)."""
    if ph.tool is not None:
        return ph.tool == 'rados-bench'
    return rados_bench_can_run(ph, object_size)


def key_slice(ph: Phase, repeat: int, repeats: int) -> Tuple[int, int]:
    """(first key, keys) a phase's fio job covers.  A sequential write phase
    writes a new slice of its keys in each repeat (repeat/repeats of the
    way in): new objects every time, as rados bench writes them and as the
    simulator models sequential keys, not a second pass over objects the
    cache has flushed and evicted, each of which would promote from the base
    before the write.  Every other phase covers all its keys."""
    assert ph.keys is not None
    if ph.op == 'write' and ph.keys.dist == 'sequential' and repeats > 1:
        n = ph.keys.count // repeats
        return repeat * n, n
    return 0, ph.keys.count


def seed(ph: Phase, phase_index: int, repeat: int) -> int:
    """fio's randseed.  Zipf phases with the same keys and block size share
    one seed, so their hot set (fio hashes ranks onto offsets with a seeded
    offset) is the same objects in every phase and repeat; other random
    phases get a seed per phase and repeat (a new burst writes other keys)."""
    if ph.keys is not None and ph.keys.dist == 'zipf':
        return zlib.crc32(f'zipf:{ph.keys.count}:{ph.keys.theta}:{ph.block_size}'.encode())
    return 1000 * (repeat + 1) + phase_index


def fio_argv(ph: Phase, image: Image, runtime_s: float, rand_seed: int,
             prefix: Path, keys: Optional[Tuple[int, int]] = None) -> List[str]:
    """keys: (first key, keys) of the range the job covers (key_slice);
    default all the phase's keys."""
    assert ph.keys is not None and ph.op != 'idle'
    seq = ph.keys.dist == 'sequential'
    first, count = keys if keys is not None else (0, ph.keys.count)
    rw = {'write': 'write', 'read': 'read', 'mixed': 'rw'}[ph.op]
    argv = ['fio', f'--name={prefix.name}', '--ioengine=rbd', f'--clientname={image.client}',
            f'--pool={image.pool}', f'--rbdname={image.name}',
            f'--rw={rw if seq else "rand" + rw}', f'--bs={ph.block_size}',
            f'--iodepth={ph.threads}', '--numjobs=1',
            f'--offset={first * image.object_size}', f'--size={count * image.object_size}',
            '--time_based', f'--runtime={max(int(runtime_s * 1000), 1000)}ms',
            # fio 3.33 ignores randseed (every run gets the same offsets) unless
            # randrepeat is off; with both, the seed alone decides (seen)
            f'--randseed={rand_seed}', '--randrepeat=0',
            f'--write_lat_log={prefix}', '--log_avg_msec=0', '--log_unix_epoch=1',
            '--output-format=json', f'--output={prefix}.json']
    if ph.op == 'mixed':
        argv.append(f'--rwmixread={round(100 * (ph.read_fraction or 0.0))}')
    if not seq:
        argv.append('--norandommap')
        argv.append('--random_distribution=' + (
            f'zipf:{ph.keys.theta}' if ph.keys.dist == 'zipf' else 'random'))
    if ph.rate_mib_s is not None:
        rate = int(ph.rate_mib_s * (1 << 20))
        if ph.op == 'mixed':
            rf = ph.read_fraction or 0.0
            argv.append(f'--rate={int(rate * rf)},{int(rate * (1 - rf))}')
        else:
            argv.append(f'--rate={rate}')
    return argv


def read_fio(prefix: Path) -> Ops:
    """Every op fio logged for this phase (prefix_lat.N.log: time ms, latency
    ns, direction 0 read / 1 write, bytes, ...)."""
    parts = []
    for path in sorted(prefix.parent.glob(f'{prefix.name}_lat.*.log')):
        if path.stat().st_size == 0:
            continue
        a = np.loadtxt(path, delimiter=',', usecols=(0, 1, 2, 3), dtype=np.int64, ndmin=2)
        parts.append(Ops(t=a[:, 0] / 1000.0, lat_s=a[:, 1] / 1e9, nbytes=a[:, 3].astype(float),
                         ops=np.ones(len(a)), write=a[:, 2] == 1))
    return Ops.concat(parts)


def fio_summary(prefix: Path) -> Dict[str, Any]:
    """fio's own totals for the phase (a cross-check of the per-op logs)."""
    d = json.loads(Path(f'{prefix}.json').read_text())
    job = d['jobs'][0]
    out: Dict[str, Any] = {'error': job.get('error', 0), 'runtime_ms': job.get('job_runtime')}
    for ddir in ('read', 'write'):
        s = job.get(ddir, {})
        if s.get('total_ios'):
            out[ddir] = {'ios': s['total_ios'], 'bytes': s['io_bytes'],
                         'mib_s': round(s['bw_bytes'] / (1 << 20), 3)}
    return out


def rados_bench_argv(ph: Phase, pool: str, runtime_s: float, run_name: str) -> List[str]:
    return ['rados', '-p', pool, 'bench', str(max(int(round(runtime_s)), 1)), 'write',
            '-b', str(ph.block_size), '-t', str(ph.threads), '--no-cleanup',
            '--run-name', run_name, '--show-time']


_TS = r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+[+-]\d{4})'
_SEC_LINE = re.compile(_TS + r'\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\S+\s*$')


def _epoch(ts: str) -> float:
    return datetime.strptime(ts, '%Y-%m-%dT%H:%M:%S.%f%z').timestamp()


def read_rados_bench(text: str, block_size: int) -> 'RadosBench':
    """The per-second lines of `rados bench --show-time` (time, sec, ops in
    flight, started, finished, ...) and its summary."""
    t: List[float] = []
    done: List[float] = []
    prev = 0
    for line in text.splitlines():
        m = _SEC_LINE.match(line.strip())
        if m:
            finished = int(m.group(5))
            if finished > prev:
                t.append(_epoch(m.group(1)))
                done.append(float(finished - prev))
            prev = finished
    summary = {k.strip(): v.strip() for k, v in
               (line.split(':', 1) for line in text.splitlines()
                if ':' in line and not re.match(_TS, line.strip()))}
    n = np.asarray(done)
    ops = Ops(t=np.asarray(t), lat_s=np.full(n.size, np.nan), nbytes=n * block_size, ops=n,
              write=np.ones(n.size, dtype=bool))

    def num(key: str) -> Optional[float]:
        v = summary.get(key)
        return float(v) if v is not None else None
    return RadosBench(ops=ops, total_writes=num('Total writes made'),
                      avg_lat_s=num('Average Latency(s)'), max_lat_s=num('Max latency(s)'))


@dataclass
class RadosBench:
    ops: Ops
    total_writes: Optional[float]
    avg_lat_s: Optional[float]
    max_lat_s: Optional[float]


def run_logged(argv: List[str], env: Dict[str, str], log_path: Path,
               timeout_s: float) -> 'subprocess.CompletedProcess[str]':
    """Run a workload tool; its output goes to log_path as well.  On a
    timeout the tool (our child, by PID) is killed."""
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        log_path.write_text(out)
        return subprocess.CompletedProcess(argv, proc.returncode, out, '')
