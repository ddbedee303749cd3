#!/usr/bin/env bash
# make demo: a local cluster with a writeback cache tier, tiertune enabled,
# an overwrite burst driven past the dirty ratio while `ceph tiertune status`
# is printed.  The cluster is left running for `ceph tiertune ...`.
set -euo pipefail
dir=${1:-/tmp/tiertune-demo}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
py=/usr/bin/python3

if [ -e "$dir/cluster.json" ]; then
    echo "a demo cluster already runs in $dir: 'make demo-stop' first" >&2
    exit 1
fi
# 256 MiB target in 16 PGs: each PG's share is 16 MiB, its dirty threshold
# (0.4) 6.4 MiB.  The burst overwrites 200 x 1 MiB objects, well past it.
(cd "$here" && $py -m localcluster start --dir "$dir" target_max_bytes=268435456) >/dev/null
export CEPH_CONF=$dir/ceph.conf
ceph config set mgr mgr/tiertune/sleep_interval 3

status() { echo "--- $(date +%T) ceph tiertune status"; ceph tiertune status; }

status
"$repo/qa/workunits/tiertune/overwrite_burst.sh" base 200 1048576 16 demo &
burst=$!
while kill -0 "$burst" 2>/dev/null; do
    sleep 4
    status
done
wait "$burst"
# Stats reach the mgr a few seconds after the ops: show the burst's result.
for _ in $(seq 1 20); do
    sleep 3
    dirty=$(ceph tiertune status -f json | $py -c \
        'import json,sys; print((json.load(sys.stdin)["pools"][0]["bytes"] or {}).get("dirty", 0))')
    [ "$dirty" -gt 0 ] && break
done
status
echo
echo "The cluster is still running (logs in $dir/log). To use it:"
echo "export CEPH_CONF=$CEPH_CONF"
