"""How fast this machine runs plain Python just now: the yardstick the
CPU-time benchmarks print beside their figures.

The project's 2-core VM moves from hour to hour: the same tick measured
7.6 and 12.9 ms a few minutes apart, and this loop took about 70 ms on a
quiet day and 22 ms on another (session 44).  A tick's CPU time read
without it says as much about the hour as about the module; two figures
are comparable only with their reference loops near each other.
"""

import time

# Iterations of the reference loop: long enough to span a few scheduler
# slices, short next to a measurement.
REFERENCE_LOOP = 1_000_000


def reference_ms() -> float:
    """CPU ms of a fixed pure-Python loop: the machine's speed just now."""
    t0 = time.process_time()
    acc = 0
    for i in range(REFERENCE_LOOP):
        acc += i * i
    return (time.process_time() - t0) * 1000
