"""Start daemons in the foreground so their PIDs are ours; stop only those."""

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional


def spawn(argv: List[str], log: Path, env: Optional[Dict[str, str]] = None,
          cgroup_procs: Optional[Path] = None) -> int:
    """Start argv detached from our session, stdout/stderr to log.

    With cgroup_procs, the process joins that cgroup *before* exec, so every
    thread it ever creates is inside it (moving a running multi-threaded
    daemon later would miss nothing in v1, but would let start-up I/O escape).
    """
    if cgroup_procs is not None:
        argv = ['/bin/sh', '-c', f'echo $$ > {cgroup_procs} && exec "$@"', 'sh', *argv]
    with open(log, 'ab') as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, close_fds=True)
    return proc.pid


def is_ours(pid: int, marker: str) -> bool:
    """True if pid is alive and its command line mentions marker (our cluster
    directory): guards against killing a recycled PID."""
    try:
        cmdline = Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ')
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return marker.encode() in cmdline


def reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop_pids(pids: List[int], marker: str, grace_s: float = 10.0) -> List[int]:
    """SIGTERM our PIDs, then SIGKILL whatever outlives grace_s. Returns the
    PIDs that were still ours and had to be signalled."""
    live = [p for p in pids if is_ours(p, marker)]
    for pid in live:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        for pid in live:
            reap(pid)
        if not any(is_ours(p, marker) and not _zombie(p) for p in live):
            break
        time.sleep(0.1)
    for pid in live:
        if is_ours(pid, marker) and not _zombie(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # Wait until they are gone, not just dead: a zombie still holds its
    # cgroup membership until init (daemons we started from a process that
    # has since exited are init's children) reaps it.
    deadline = time.monotonic() + grace_s
    for pid in live:
        while Path(f'/proc/{pid}').exists() and time.monotonic() < deadline:
            reap(pid)
            time.sleep(0.05)
    return live


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(')', 1)[1].split()[0] == 'Z'
