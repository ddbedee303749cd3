"""Does TIERTUNE_CACHE_FULL_RISK warn before writes block, and only then?

    full_risk_check.py [--scenario FILE ...] [--seeds N] [--out FILE.md]

Runs each scenario (default: every shipped simulator scenario) under
tiertune on the simulator, and after every step computes the module's own
health checks (tiertune.health.health_checks, on the tuner's views of the
latest tick) and whether a write waited on a FULL PG in that step.  Per
run it prints, in seconds of simulated time (1 s steps):

  predicted   the fill predicted to reach 100% of the target within the
              pool's horizon_s (a fitted model): what the check was raised
              on alone before it also asked why writes would block
  raised      TIERTUNE_CACHE_FULL_RISK raised (held as the module holds it:
              health.FullRiskHold, FULL_RISK_CLEAR_S after its last raise)
  raises      how many times it was raised after being clear (each a
              HEALTH_WARN and a cluster log line)
  blocked     writes blocked on a FULL PG
  precision   of the seconds raised (or predicted), those with a blocked
              step within the horizon after them
  recall      of the blocked seconds, those with the check raised (or the
              prediction made) within the horizon before them

The horizon is tiertune's default horizon_s (600 s), the one the check
compares the prediction with.  Simulator figures: the cluster's PGs stay
FULL longer (full_spells.py), so blocked seconds here are a lower bound.
"""

import argparse
import bisect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fp_pin  # noqa: E402

if __name__ == '__main__':
    fp_pin.pin()     # before numpy's first import (see fp_pin)

import policies  # noqa: E402
import scenario as scn  # noqa: E402

DEFAULT_SEEDS = 1
CHECK = 'TIERTUNE_CACHE_FULL_RISK'


@dataclass
class Trace:
    """Per run, the step end times (s) at which each thing held."""
    predicted: List[float] = field(default_factory=list)
    raised: List[float] = field(default_factory=list)
    blocked: List[float] = field(default_factory=list)
    steps: int = 0
    raises: int = 0


def _followed(times: Sequence[float], by: Sequence[float], within: float) -> int:
    """How many of times have an element of by (sorted) in [t, t + within]."""
    n = 0
    for t in times:
        i = bisect.bisect_left(by, t)
        n += i < len(by) and by[i] <= t + within
    return n


def _preceded(times: Sequence[float], by: Sequence[float], within: float) -> int:
    """How many of times have an element of by (sorted) in [t - within, t]."""
    n = 0
    for t in times:
        i = bisect.bisect_right(by, t)
        n += i > 0 and by[i - 1] >= t - within
    return n


def trace(sc: scn.Scenario, seed: int) -> Trace:
    from simulator.run import simulate
    from simulator.tier import StepResult
    tt = policies.tiertune_package()
    health = tt['health']
    out = Trace()
    state: Dict[str, Any] = {'views': None, 'predicted': False, 'raised': False}
    hold = health.FullRiskHold()

    def watch(t: float, driver: Optional[policies.TiertuneDriver], res: StepResult) -> None:
        assert driver is not None
        out.steps += 1
        views, settings = driver.tuner.views, driver.tuner.settings
        key = tuple(id(v) for v in views.values())
        if key != state['views']:       # a tick ran: its views are new
            state['views'] = key
            raised = CHECK in health.health_checks(driver.tiers, views, settings, hold, t)
            out.raises += raised and not state['raised']
            state['raised'] = raised
            state['predicted'] = any(
                health.predicted_full(v, settings.pool(pid).knobs.horizon_s) is not None
                for pid, v in views.items())
        if state['predicted']:
            out.predicted.append(t)
        if state['raised']:
            out.raised.append(t)
        if res.blocked:
            out.blocked.append(t)
    simulate(sc, policies.parse('tiertune'), seed=seed, watch=watch)
    return out


def _share(n: int, of: int) -> str:
    return f'{n}/{of}' if of else '-'


def row(name: str, seed: int, tr: Trace, horizon: float) -> str:
    cells = [name, str(seed), str(tr.steps)]
    for warned in (tr.predicted, tr.raised):
        cells += [str(len(warned)), _share(_followed(warned, tr.blocked, horizon), len(warned)),
                  _share(_preceded(tr.blocked, warned, horizon), len(tr.blocked))]
    cells += [str(tr.raises), str(len(tr.blocked))]
    return '| ' + ' | '.join(cells) + ' |'


HEADER = ('| scenario | seed | s | predicted s | its precision | its recall | raised s | '
          'precision | recall | raises | blocked s |\n'
          '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')


def report(scenarios: Sequence[scn.Scenario], seeds: int) -> str:
    horizon = policies.tiertune_package()['bounds'].Knobs().horizon_s
    lines = [f'# TIERTUNE_CACHE_FULL_RISK on the simulator (horizon {horizon:.0f} s)', '',
             '`tools/bench/full_risk_check.py`; see its docstring.', '', HEADER]
    for sc in scenarios:
        for seed in range(seeds):
            lines.append(row(sc.name, seed, trace(sc, seed), horizon))
            print(lines[-1], file=sys.stderr, flush=True)
    return '\n'.join(lines) + '\n'


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog='full_risk_check.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scenario', type=Path, action='append',
                    help='a scenario file (default: every shipped simulator scenario)')
    ap.add_argument('--seeds', type=int, default=DEFAULT_SEEDS)
    ap.add_argument('--out', type=Path)
    a = ap.parse_args(argv)
    try:
        paths = a.scenario or [p for name, p in sorted(scn.shipped().items())]
        text = report([scn.load(p) for p in paths], a.seeds)
    except (scn.ScenarioError, policies.PolicyError, ValueError, OSError) as e:
        ap.exit(2, f'full_risk_check.py: {e}\n')
    print(text, end='')
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
