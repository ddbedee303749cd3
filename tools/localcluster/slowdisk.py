"""A slow disk: a loop device over a sparse file, throttled by a blkio cgroup.

BlueStore on such a device behaves like an HDD-backed OSD: bandwidth and IOPS
are capped in the block layer while ops still run concurrently and BlueStore's
own metadata cache stays in memory.  (Ceph's dispatch-delay injection, by
contrast, serialises every op, including the cheap existence checks a
promotion sends to the base tier.)
"""

import os
import subprocess
import time
from pathlib import Path
from typing import Optional

BLKIO_ROOT = Path('/sys/fs/cgroup/blkio')


class SlowDiskError(RuntimeError):
    pass


def attach_loop(image: Path, size_bytes: int) -> str:
    with open(image, 'wb') as f:
        f.truncate(size_bytes)
    try:
        out = subprocess.run(['losetup', '--find', '--show', str(image)],
                             check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise SlowDiskError(f'losetup failed for {image}: {e.stderr.strip()}') from e
    return out.stdout.strip()


def detach_loop(device: str) -> None:
    subprocess.run(['losetup', '-d', device], capture_output=True)


def device_number(device: str) -> str:
    st = os.stat(device)
    return f'{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}'


def make_cgroup(name: str) -> Path:
    if not (BLKIO_ROOT / 'blkio.throttle.write_bps_device').exists() and \
            not BLKIO_ROOT.is_dir():
        raise SlowDiskError(f'no cgroup-v1 blkio controller at {BLKIO_ROOT}')
    group = BLKIO_ROOT / name
    group.mkdir(exist_ok=True)
    return group


def throttle(group: Path, device: str, write_bps: int, read_bps: int,
             write_iops: int, read_iops: int) -> None:
    dev = device_number(device)
    for knob, value in (('write_bps_device', write_bps), ('read_bps_device', read_bps),
                        ('write_iops_device', write_iops), ('read_iops_device', read_iops)):
        if value > 0:
            (group / f'blkio.throttle.{knob}').write_text(f'{dev} {value}\n')


def remove_cgroup(group: Optional[Path], timeout_s: float = 10.0) -> bool:
    """Remove the group once its last task is gone. False if it never empties
    (a daemon we could not stop): then it is left in place."""
    if group is None or not group.exists():
        return True
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            group.rmdir()
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
