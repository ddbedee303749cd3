"""python3 -m localcluster start|stop|info|params --dir DIR [KEY=VALUE ...]"""

import argparse
import json
import sys
from pathlib import Path

from .cluster import ClusterError, LocalCluster
from .spec import ClusterSpec


def main() -> int:
    ap = argparse.ArgumentParser(prog='localcluster',
                                 description='a local Ceph cluster with a writeback cache tier')
    ap.add_argument('action', choices=['start', 'stop', 'info', 'params'])
    ap.add_argument('--dir', type=Path, default=Path('/tmp/tiertune-cluster'))
    ap.add_argument('--keep-logs', action='store_true', help='on stop: keep DIR/log')
    ap.add_argument('params', nargs='*', metavar='KEY=VALUE',
                    help='cluster parameters (see "params")')
    args = ap.parse_intermixed_args()
    try:
        if args.action == 'params':
            print(json.dumps(ClusterSpec().to_dict(), indent=2))
        elif args.action == 'start':
            overrides = dict(p.split('=', 1) for p in args.params)
            spec = ClusterSpec().with_overrides(overrides)
            c = LocalCluster(args.dir, spec)
            try:
                c.start()
            except BaseException:
                c.stop(keep_logs=True)
                raise
            print(f'export CEPH_CONF={c.conf}')
        elif args.action == 'stop':
            if not (args.dir / 'cluster.json').exists():
                print(f'no cluster in {args.dir}', file=sys.stderr)
                return 0
            LocalCluster.attach(args.dir).stop(keep_logs=args.keep_logs)
        elif args.action == 'info':
            c = LocalCluster.attach(args.dir)
            print(json.dumps({'conf': str(c.conf), 'pids': c.state['pids'],
                              'loops': c.state['loops'], 'bench_mb_s': c.bench}, indent=2))
    except (ClusterError, KeyError, ValueError) as e:
        print(f'localcluster: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
