"""Workload scenarios: one YAML file per workload, loaded and checked here.

The same file drives the simulator and the real-cluster driver (fio, rados
bench).  Schema (sizes as 4MiB / 1GiB / plain bytes; durations in seconds):

    name: bursty-write-fits                  # required, [a-z0-9-]
    description: text                        # required
    cache: {target_max_bytes: 1GiB, pg_num: 32,          # required
            hit_set_count: 4, hit_set_period_s: 60,
            min_read_recency: 1, min_write_recency: 0,
            promote_max_mib_s_per_osd: 1024, promote_max_objects_s_per_osd: 10000}
                                             # optional ones: these defaults (the
                                             # local cluster harness's settings)
    object_size: 4MiB                        # default 4MiB
    sim: {cache_bandwidth_mib_s: 400, base_bandwidth_mib_s: 40,
          base_latency_ms: 20, cache_latency_ms: 0.5, cache_osds: 4}
                                             # simulator only; these are defaults
    phases:                                  # required, at least one
      - name: burst                          # required
        duration_s: 60                       # required, > 0
        op: write | read | mixed | idle      # required
        read_fraction: 0.7                   # mixed only, required there, 0..1
        threads: 16                          # not for idle; default 16
        block_size: 4MiB                     # not for idle; default object_size
        rate_mib_s: max | 100                # not for idle; default max
        keys: {dist: uniform|zipf|sequential, count: 100000, theta: 0.99}
                                             # not for idle; theta for zipf only
        tool: fio | rados-bench              # cluster only; not for idle; default:
                                             # rados bench where it can run the
                                             # phase (sequential whole-object
                                             # writes at max rate), else fio.
                                             # fio gives per-op latencies (p99);
                                             # rados bench only their mean and max
    repeat: 4                                # default 1: the phases, this often
"""

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

OPS = ('write', 'read', 'mixed', 'idle')
TOOLS = ('fio', 'rados-bench')
DISTS = ('uniform', 'zipf', 'sequential')
UNITS = {'': 1, 'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30, 'TiB': 1 << 40}
NAME_RE = re.compile(r'^[a-z0-9][a-z0-9-]*$')


class ScenarioError(ValueError):
    pass


def parse_size(v: Any, where: str) -> int:
    if isinstance(v, bool):
        raise ScenarioError(f'{where}: {v!r} is not a size')
    if isinstance(v, int):
        n = v
    else:
        m = re.fullmatch(r'\s*(\d+(?:\.\d+)?)\s*([KMGT]iB|B)?\s*', str(v))
        if not m:
            raise ScenarioError(f'{where}: {v!r} is not a size (e.g. 4MiB, 1GiB, 4096)')
        n = int(float(m.group(1)) * UNITS[m.group(2) or ''])
    if n <= 0:
        raise ScenarioError(f'{where}: size must be positive, got {v!r}')
    return n


@dataclass(frozen=True)
class Keys:
    dist: str
    count: int
    theta: Optional[float] = None


@dataclass(frozen=True)
class Phase:
    name: str
    duration_s: float
    op: str
    read_fraction: Optional[float] = None
    threads: int = 0
    block_size: int = 0
    rate_mib_s: Optional[float] = None      # None: as fast as it goes ("max")
    keys: Optional[Keys] = None
    tool: Optional[str] = None              # None: the cluster driver picks (fio_jobs)


@dataclass(frozen=True)
class SimParams:
    cache_bandwidth_mib_s: float = 400.0
    base_bandwidth_mib_s: float = 40.0
    base_latency_ms: float = 20.0
    cache_latency_ms: float = 0.5
    cache_osds: float = 4


@dataclass(frozen=True)
class TierParams:
    """Hit sets and promotion: they decide what reaches the cache at all,
    so both backends set them.  With hit sets (Ceph's tier default), a miss
    is proxied to the base and the object promoted afterwards, clean, if
    recent enough; writes of objects the cache lacks never land in it.
    Without (hit_set_count 0), every miss promotes at once and a write then
    lands in the cache, dirty."""
    hit_set_count: float = 4          # 0: no hit sets (every miss promotes at once)
    hit_set_period_s: float = 60.0
    min_read_recency: float = 1
    min_write_recency: float = 0
    promote_max_mib_s_per_osd: float = 1024.0
    promote_max_objects_s_per_osd: float = 10000.0


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    target_max_bytes: int
    pg_num: int
    object_size: int
    sim: SimParams
    phases: Tuple[Phase, ...]
    tier: TierParams = field(default_factory=TierParams)
    repeat: int = 1
    source: Optional[str] = field(default=None, compare=False)

    @property
    def duration_s(self) -> float:
        return self.repeat * sum(p.duration_s for p in self.phases)

    def timeline(self) -> List[Tuple[float, Phase]]:
        """Every phase with its start time (seconds from the start), repeats
        unrolled: what a clairvoyant policy is told in advance."""
        out: List[Tuple[float, Phase]] = []
        t = 0.0
        for _ in range(self.repeat):
            for p in self.phases:
                out.append((t, p))
                t += p.duration_s
        return out


SIM_KEYS = tuple(f.name for f in fields(SimParams))
TIER_KEYS = tuple(f.name for f in fields(TierParams))


def _known(d: Mapping[str, Any], allowed: Tuple[str, ...], where: str) -> None:
    extra = sorted(set(d) - set(allowed))
    if extra:
        raise ScenarioError(f'{where}: unknown key(s) {", ".join(extra)} '
                            f'(allowed: {", ".join(allowed)})')


def _num(d: Mapping[str, Any], key: str, where: str, default: Any = None,
         lo: float = 0.0, strict: bool = True) -> Any:
    v = d.get(key, default)
    if v is None:
        raise ScenarioError(f'{where}: {key} is required')
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(f'{where}: {key} must be a number, got {v!r}')
    if (v <= lo) if strict else (v < lo):
        raise ScenarioError(f'{where}: {key} must be {">" if strict else ">="} {lo}, got {v}')
    return v


def _keys(d: Any, where: str) -> Keys:
    if not isinstance(d, dict):
        raise ScenarioError(f'{where}: keys must be a mapping')
    _known(d, ('dist', 'count', 'theta'), where)
    dist = d.get('dist')
    if dist not in DISTS:
        raise ScenarioError(f'{where}: dist must be one of {", ".join(DISTS)}, got {dist!r}')
    count = int(_num(d, 'count', where))
    theta = d.get('theta')
    if dist == 'zipf':
        theta = float(_num(d, 'theta', where))
    elif theta is not None:
        raise ScenarioError(f'{where}: theta applies to zipf keys only')
    return Keys(dist=dist, count=count, theta=theta)


def _phase(d: Any, i: int, object_size: int) -> Phase:
    where = f'phases[{i}]'
    if not isinstance(d, dict):
        raise ScenarioError(f'{where}: must be a mapping')
    _known(d, ('name', 'duration_s', 'op', 'read_fraction', 'threads', 'block_size',
               'rate_mib_s', 'keys', 'tool'), where)
    name = d.get('name')
    if not name:
        raise ScenarioError(f'{where}: name is required')
    where = f'phase {name!r}'
    op = d.get('op')
    if op not in OPS:
        raise ScenarioError(f'{where}: op must be one of {", ".join(OPS)}, got {op!r}')
    duration = float(_num(d, 'duration_s', where))
    if op == 'idle':
        extra = [k for k in ('read_fraction', 'threads', 'block_size', 'rate_mib_s', 'keys',
                             'tool') if k in d]
        if extra:
            raise ScenarioError(f'{where}: an idle phase takes no {", ".join(extra)}')
        return Phase(name=str(name), duration_s=duration, op=op)
    rf = d.get('read_fraction')
    if op == 'mixed':
        rf = float(_num(d, 'read_fraction', where, lo=0.0, strict=False))
        if rf > 1:
            raise ScenarioError(f'{where}: read_fraction must be within 0..1, got {rf}')
    elif rf is not None:
        raise ScenarioError(f'{where}: read_fraction applies to mixed phases only')
    rate = d.get('rate_mib_s', 'max')
    rate_v = None if rate == 'max' else float(_num(d, 'rate_mib_s', where))
    if 'keys' not in d:
        raise ScenarioError(f'{where}: keys is required')
    ph = Phase(name=str(name), duration_s=duration, op=op, read_fraction=rf,
               threads=int(_num(d, 'threads', where, default=16)),
               block_size=parse_size(d.get('block_size', object_size), f'{where}: block_size'),
               rate_mib_s=rate_v, keys=_keys(d['keys'], f'{where}: keys'), tool=d.get('tool'))
    if ph.tool is not None and ph.tool not in TOOLS:
        raise ScenarioError(f'{where}: tool must be one of {", ".join(TOOLS)}, got {ph.tool!r}')
    if ph.tool == 'rados-bench' and not rados_bench_can_run(ph, object_size):
        raise ScenarioError(f'{where}: rados bench runs only sequential whole-object writes '
                            f'(block_size = object_size) at rate_mib_s max')
    return ph


def rados_bench_can_run(ph: Phase, object_size: int) -> bool:
    """rados bench writes new objects, one write_full each, as fast as it
    goes: a sequential whole-object write phase with no rate."""
    return (ph.op == 'write' and ph.keys is not None and ph.keys.dist == 'sequential'
            and ph.block_size == object_size and ph.rate_mib_s is None)


def from_dict(d: Any, source: Optional[str] = None) -> Scenario:
    if not isinstance(d, dict):
        raise ScenarioError('a scenario is a mapping')
    _known(d, ('name', 'description', 'cache', 'object_size', 'sim', 'phases', 'repeat'),
           'scenario')
    name = d.get('name')
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ScenarioError(f'name must be lower-case letters, digits and -, got {name!r}')
    if not d.get('description'):
        raise ScenarioError(f'{name}: description is required')
    cache = d.get('cache')
    if not isinstance(cache, dict):
        raise ScenarioError(f'{name}: cache is required (target_max_bytes, pg_num)')
    _known(cache, ('target_max_bytes', 'pg_num', *TIER_KEYS), 'cache')
    object_size = parse_size(d.get('object_size', '4MiB'), 'object_size')
    sim = d.get('sim') or {}
    _known(sim, SIM_KEYS, 'sim')
    defaults = SimParams()
    simp = SimParams(**{k: float(_num(sim, k, 'sim', default=getattr(defaults, k),
                                       strict=not k.endswith('_latency_ms')))
                        for k in SIM_KEYS})
    tdef = TierParams()
    tier = TierParams(**{k: float(_num(cache, k, 'cache', default=getattr(tdef, k),
                                       strict=not k.startswith(('min_', 'hit_set_count'))))
                         for k in TIER_KEYS})
    phases = d.get('phases')
    if not isinstance(phases, list) or not phases:
        raise ScenarioError(f'{name}: phases must be a non-empty list')
    return Scenario(
        name=name, description=str(d['description']).strip(),
        target_max_bytes=parse_size(cache.get('target_max_bytes'), 'cache.target_max_bytes'),
        pg_num=int(_num(cache, 'pg_num', 'cache')), object_size=object_size, sim=simp,
        phases=tuple(_phase(p, i, object_size) for i, p in enumerate(phases)), tier=tier,
        repeat=int(_num(d, 'repeat', name, default=1)), source=source)


def load(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as e:
        raise ScenarioError(f'{path}: not YAML: {e}') from e
    try:
        return from_dict(data, source=str(path))
    except ScenarioError as e:
        raise ScenarioError(f'{path}: {e}') from e


SCENARIO_DIR = Path(__file__).resolve().parent / 'scenarios'


def shipped() -> Dict[str, Path]:
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob('*.yaml'))}


def load_shipped(names: Sequence[str]) -> List[Scenario]:
    """The shipped scenarios of these names (all of them if none), in order;
    ScenarioError naming every unknown one."""
    files = shipped()
    names = list(names) or sorted(files)
    unknown = [n for n in names if n not in files]
    if unknown:
        raise ScenarioError(f'unknown scenarios: {", ".join(unknown)}')
    return [load(files[n]) for n in names]
