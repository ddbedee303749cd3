"""tiertune's mgr options: numpy-free, so that the module without numpy
(without_numpy.py) declares the same ones as the module proper."""

from typing import Any

from mgr_module import Option

# The monitor enforces a module option's min only when it has a max too
# (MgrMonitor sets both or neither): without one, `config set ...
# sleep_interval 0` was taken, and the loop spun, each sample too close to
# the last for a rate.  A day is far past any useful tick.
SLEEP_INTERVAL_MIN_S = 1
SLEEP_INTERVAL_MAX_S = 86400
SAVE_INTERVAL_MAX_S = 86400

OPTIONS = [
    Option('sleep_interval', type='secs', default=30, min=SLEEP_INTERVAL_MIN_S,
           max=SLEEP_INTERVAL_MAX_S, runtime=True,
           desc='how often to sample the cache pools (and decide)'),
    Option('history_size', type='uint', default=120, min=2, max=100000, runtime=True,
           desc='samples kept per cache pool'),
    Option('samples_save_interval', type='secs', default=300, min=0, max=SAVE_INTERVAL_MAX_S,
           runtime=True,
           desc='how often each cache pool\'s samples are written to the store, to '
                'survive a mgr restart or failover (0: every tick)'),
]
# Only ours: the mgr appends its logging options to MODULE_OPTIONS, and
# mgr_module keeps their current values as its own state.
OPTION_NAMES = tuple(o['name'] for o in OPTIONS)
_BOUNDS = {o['name']: (o['min'], o['max']) for o in OPTIONS}


def within_bounds(name: str, value: Any) -> int:
    """An option's value held to its declared bounds.  The monitor holds
    `config set` to them, but not a value stored before they were declared
    (sleep_interval 0 would spin the loop)."""
    lo, hi = _BOUNDS[name]
    return min(max(int(value), lo), hi)
