"""Which CPUs the processes a benchmark started may run on.

For benchmarks that measure one daemon's CPU time on a machine it shares
with the load (mgr_tick_cost.py): on this project's two-CPU VM the OSDs
writing for the load and the ceph-mgr being measured take turns on the
same two CPUs, and a thread's CPU time grows when another process has
just run on its CPU (its caches are cold).  Pinning the measured daemon
to one CPU and everything else to the other shows what the daemon costs
with a CPU of its own, as a mgr on its own host has.

Only PIDs the caller started are ever touched, each thread of each
(a process's threads each carry their own CPU mask; threads started
later inherit their creator's).
"""

import os
from pathlib import Path
from typing import Dict, Iterable, List, Set


def threads(pid: int) -> List[int]:
    """The thread ids of a live process (empty when it is gone)."""
    try:
        return [int(t.name) for t in Path(f'/proc/{pid}/task').iterdir()]
    except FileNotFoundError:
        return []


def set_cpus(pids: Iterable[int], cpus: Set[int]) -> int:
    """Restrict every thread of each pid to cpus; returns how many threads
    were set (a thread that ended meanwhile is skipped)."""
    n = 0
    for pid in pids:
        for tid in threads(pid):
            try:
                os.sched_setaffinity(tid, cpus)
                n += 1
            except ProcessLookupError:
                continue
    return n


def split(measured: Iterable[int], rest: Iterable[int], cpus: Set[int]) -> Dict[str, Set[int]]:
    """The measured processes on the highest CPU of cpus, the rest on all
    the others.  Needs two CPUs at least."""
    ordered = sorted(cpus)
    if len(ordered) < 2:
        raise ValueError(f'pinning needs two CPUs at least, this process may use {ordered}')
    own, others = {ordered[-1]}, set(ordered[:-1])
    set_cpus(measured, own)
    set_cpus(rest, others)
    return {'measured': own, 'rest': others}


def share(pids: Iterable[int], cpus: Set[int]) -> None:
    """Every process back on all of cpus."""
    set_cpus(pids, cpus)
