"""Benchmark policies: how the ratios are chosen during a run.

  static:D,H,F   fixed ratios (Ceph's defaults: static:0.4,0.6,0.8; the
                 OSiRIS site's: static:0.3,0.4,0.7)
  tiertune       the module's own code, through the interface the module
                 uses (mgr-shaped osd_map/pool_stats in, `osd pool set` out),
                 with the benchmarks' settings (BENCH_CONFIG)
  tiertune-defaults
                 simulator only: the same at the module's defaults, as an
                 operator who only turns it on runs it (DEFAULTS_CONFIG)
  best-static    the best static:D,H,F in hindsight (a grid searched on the
                 simulator; see run.py)
  clairvoyant    simulator only: told the phases in advance, it holds the
                 dirty ratio at its floor before each write phase and at its
                 ceiling during it (the reference for an online policy)
  no-tier        no cache tier in the clients' path: the base pool alone
                 (the OSiRIS site's "without"; on the cluster the overlay is
                 removed), for what the tier buys at all

The tiertune settings below are the same on both backends.
"""

import importlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
MGR_DIR = REPO / 'src' / 'pybind' / 'mgr'

CEPH_DEFAULTS = (0.4, 0.6, 0.8)
# How the module runs in a benchmark: its tick, and the per-pool settings
# (`ceph tiertune set cache KEY VALUE`).  min_interval_s 0 leaves the pool's
# hit_set_period as the rate limit, which scenarios minutes long need.
TIERTUNE_SLEEP_INTERVAL_S = 10.0
TIERTUNE_SETTINGS: Dict[str, float] = {'min_interval_s': 0.0}
# sleep_interval's default in the module's options (options.py, which needs
# mgr_module; a harness test holds the two equal).
MODULE_SLEEP_INTERVAL_S = 30.0


@dataclass(frozen=True)
class TiertuneConfig:
    """How the module runs in a run: its tick, and the per-pool settings
    set before it starts (none: every bound and knob at its default)."""
    sleep_interval_s: float
    settings: Mapping[str, float]


BENCH_CONFIG = TiertuneConfig(TIERTUNE_SLEEP_INTERVAL_S, TIERTUNE_SETTINGS)
# Its defaults: a tick every 30 s, and min_interval_s 600, so the rate
# limit is 10 minutes, not the scenarios' 60 s hit_set_period.
DEFAULTS_CONFIG = TiertuneConfig(MODULE_SLEEP_INTERVAL_S, {})
TIERTUNE_CONFIGS = {'tiertune': BENCH_CONFIG, 'tiertune-defaults': DEFAULTS_CONFIG}


def _reraise(msg: str) -> None:
    """The tuner's log_error: a pool the module's code cannot fit or decide
    is a bug a benchmark must stop on, not a line in its output."""
    raise   # called in the tuner's except block: re-raises its exception


class PolicyError(ValueError):
    pass


@dataclass(frozen=True)
class PolicySpec:
    kind: str            # static | tiertune | tiertune-defaults | best-static | clairvoyant
    #                      | no-tier
    ratios: Optional[Tuple[float, float, float]] = None

    @property
    def name(self) -> str:
        if self.kind == 'static' and self.ratios:
            return 'static:' + ','.join(f'{r:g}' for r in self.ratios)
        return self.kind


def parse(text: str) -> PolicySpec:
    if text.startswith('static:'):
        try:
            d, h, f = (float(x) for x in text[len('static:'):].split(','))
        except ValueError as e:
            raise PolicyError(f'{text!r}: static takes three ratios, static:D,H,F') from e
        if not 0 <= d <= h <= f <= 1:
            raise PolicyError(f'{text!r}: ratios must satisfy 0 <= D <= H <= F <= 1')
        return PolicySpec('static', (d, h, f))
    if text in ('tiertune', 'tiertune-defaults', 'best-static', 'clairvoyant', 'no-tier'):
        return PolicySpec(text)
    raise PolicyError(f'unknown policy {text!r} (static:D,H,F, tiertune, tiertune-defaults, '
                      f'best-static, clairvoyant, no-tier)')


def tiertune_package() -> Dict[str, Any]:
    """The module's policy code (tuner and what it imports), loaded from the
    source tree without the package __init__ (which imports the mgr glue and
    so needs ceph-mgr's ceph_module)."""
    if 'tiertune' not in sys.modules:
        pkg = types.ModuleType('tiertune')
        pkg.__path__ = [str(MGR_DIR / 'tiertune')]
        sys.modules['tiertune'] = pkg
    names = ('tuner', 'topology', 'sampling', 'rates', 'models', 'state', 'bounds', 'health')
    return {n: importlib.import_module(f'tiertune.{n}') for n in names}


class TiertuneDriver:
    """One tiertune tick against any mgr-shaped source: what Module.tick
    does, minus persistence, health and progress (the mgr glue)."""

    def __init__(self, get: Callable[[str], Any], pool_set: Callable[[int, str, str, str],
                 Optional[str]], osds: int, promote_objects_s: float,
                 promote_bytes_s: float, history_size: int = 120,
                 log: Callable[[str], None] = lambda m: None,
                 config: TiertuneConfig = BENCH_CONFIG) -> None:
        tt = tiertune_package()
        self.tt = tt
        self.config = config
        self.get = get
        self.book = tt['rates'].HistoryBook(history_size)
        self.tuner = tt['tuner'].Tuner()
        self.effects = tt['tuner'].Effects(
            pool_set=pool_set, save_settings=lambda: None, save_history=lambda pid: None,
            audit=log, log=log, log_error=_reraise)
        self.limits_args = (promote_objects_s, promote_bytes_s, osds)
        self.audit: List[str] = []
        # The cache tiers of the last tick, as the module's tick hands them
        # to its health checks.
        self.tiers: Dict[int, Any] = {}
        self._configured = False

    def _configure(self, tiers: Dict[int, Any]) -> None:
        st = self.tuner.settings
        for pid in tiers:
            ps = st.pool(pid)
            ps.mode = 'on'
            for key, value in self.config.settings.items():
                b, k, problem = self.tt['bounds'].with_setting(ps.bounds, ps.knobs, key, value)
                if problem:
                    raise PolicyError(f'tiertune setting {key}={value}: {problem}')
                ps.bounds, ps.knobs = b, k
        self._configured = True

    def tick(self, mono: float, wall: float) -> None:
        tt = self.tt
        tiers = self.tiers = tt['topology'].cache_tiers(self.get('osd_map'))
        if not self._configured:
            self._configure(tiers)
        samples = tt['sampling'].take_samples(self.get, tiers, mono, wall)
        dirty = {pid: tt['sampling'].agent_levels(tiers[pid], s.counters).dirty_bytes
                 for pid, s in samples.items()}
        self.book.record(samples, dirty, tiers.keys())
        objects, nbytes, osds = self.limits_args
        limits = {pid: tt['models'].PromoteLimits(max_objects_sec_per_osd=objects,
                                                  max_bytes_sec_per_osd=nbytes, osds=osds)
                  for pid in tiers}
        self.tuner.step(tiers, self.book, [], limits, self.config.sleep_interval_s, self.effects,
                        mono, wall)
