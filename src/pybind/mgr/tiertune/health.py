"""The module's health checks, computed in one place from a tick's results."""

import math
from typing import Any, Dict, List, Mapping

from .state import Settings
from .topology import CacheTier
from .tuner import PoolView


def _check(summary: str, detail: List[str]) -> Dict[str, Any]:
    return {'severity': 'warning', 'summary': summary, 'count': len(detail), 'detail': detail}


def _seconds(s: float) -> str:
    # A band's slow edge is infinite when the inflow's spread exceeds its mean.
    return f'{s:.0f}s' if math.isfinite(s) else 'never'


def health_checks(tiers: Mapping[int, CacheTier], views: Mapping[int, PoolView],
                  settings: Settings) -> Dict[str, Any]:
    """TIERTUNE_NO_TARGET, TIERTUNE_CACHE_FULL_RISK, TIERTUNE_BOUNDS_BLOCK for
    the pools tiertune looks at (mode warn or on)."""
    no_target: List[str] = []
    full_risk: List[str] = []
    blocked: List[str] = []
    for pid, tier in sorted(tiers.items(), key=lambda kv: kv[1].pool):
        if not tier.has_target:
            no_target.append(f'pool {tier.pool} has no target_max_bytes/objects: its agent '
                             f'never flushes or evicts, and writes block once it fills')
        view = views.get(pid)
        if view is None:
            continue
        ttf = view.predictions.time_to_full_s     # (view.model would compute the promote gate)
        horizon = settings.pool(pid).knobs.horizon_s
        # Only from a fitted model, as the controller acts only on one: on
        # a history shorter than FIT_MIN_WINDOW_S one skewed stats report
        # dominates, and the check came and went with the first burst a new
        # (or newly enabled) module saw.
        if view.fitted and ttf is not None and ttf.value < horizon:
            full_risk.append(f'pool {tier.pool} is predicted to reach 100% of its target (where '
                             f'writes block) in {_seconds(ttf.value)} (band {_seconds(ttf.low)} '
                             f'to {_seconds(ttf.high)}), under the {horizon:.0f}s horizon')
        if view.decision.bounds_block:
            blocked.append(f'pool {tier.pool}: {view.decision.bounds_block}')
    checks: Dict[str, Any] = {}
    if no_target:
        checks['TIERTUNE_NO_TARGET'] = _check(
            f'{len(no_target)} cache pool(s) without target_max_bytes/objects', no_target)
    if full_risk:
        checks['TIERTUNE_CACHE_FULL_RISK'] = _check(
            f'{len(full_risk)} cache pool(s) predicted to fill within the horizon', full_risk)
    if blocked:
        checks['TIERTUNE_BOUNDS_BLOCK'] = _check(
            f'{len(blocked)} cache pool(s) need a change their tiertune bounds forbid', blocked)
    return checks
