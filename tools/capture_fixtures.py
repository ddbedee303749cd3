#!/usr/bin/python3
"""Record the raw mgr data tiertune reads, from a real cluster, as unit-test fixtures.

Starts a local cluster (tools/localcluster), then records `ceph tiertune
dump-inputs` (the osd_map pools and pool_stats entries exactly as the module's
get() returned them) every few seconds through: an empty tier, the create pass
of an overwrite burst (proxied and promoted), the overwrite pass (dirty data,
past the dirty ratio), and the drain that follows.

usage: tools/capture_fixtures.py OUT.json [--dir DIR]
"""

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from localcluster import ClusterSpec, LocalCluster, MiB

REPO = Path(__file__).resolve().parents[1]
BURST = REPO / 'qa' / 'workunits' / 'tiertune' / 'overwrite_burst.sh'


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('out', type=Path)
    ap.add_argument('--dir', type=Path, default=Path('/tmp/tiertune-capture'))
    ap.add_argument('--interval', type=float, default=3.0)
    args = ap.parse_args()

    spec = ClusterSpec(target_max_bytes=256 * MiB, bench_seconds=0)
    c = LocalCluster(args.dir, spec).start()
    samples = []
    phase = {'label': 'empty'}
    stop = threading.Event()

    def record() -> None:
        while not stop.is_set():
            out = c.ceph('tiertune', 'dump-inputs').stdout
            samples.append({'mono': time.monotonic(), 'wall': time.time(),
                            'phase': phase['label'], 'inputs': json.loads(out)})
            stop.wait(args.interval)

    try:
        t = threading.Thread(target=record)
        t.start()
        time.sleep(2 * args.interval)
        phase['label'] = 'burst'
        subprocess.run([str(BURST), spec.base_pool, '180', str(1 << 20)], env=c.env, check=True)
        phase['label'] = 'drain'
        time.sleep(40)
        stop.set()
        t.join()
        version = c.run(['ceph', '--version']).stdout.strip()
        args.out.write_text(json.dumps({
            'what': 'ceph tiertune dump-inputs recorded every few seconds on a localcluster '
                    '(2 memstore + 2 throttled BlueStore OSDs), through an overwrite burst of '
                    '180 x 1 MiB objects into a 256 MiB writeback tier',
            'ceph_version': version,
            'captured': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
            'spec': spec.to_dict(),
            'samples': samples,
        }, indent=1))
        print(f'{len(samples)} samples -> {args.out}')
    finally:
        stop.set()
        c.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
