#!/usr/bin/env bash
# Write a burst that a writeback cache tier absorbs as dirty data.
#
# With bloom hit sets, a write to an object the cache does not hold is proxied
# to the base pool and the object is then promoted as a *clean* copy; only
# writes to objects already in the cache leave dirty data behind.  So: one
# pass creates the objects (at the base tier's speed), a second pass
# overwrites the same objects (at the cache's speed) and dirties them.
#
# usage: overwrite_burst.sh POOL OBJECTS [OBJECT_BYTES] [THREADS] [RUN_NAME]
# POOL is the base pool (clients address the base; the overlay sends them to
# the cache).  Needs CEPH_CONF (or the default cluster) and rados.
set -euo pipefail
pool=${1:?pool}
objects=${2:?objects}
size=${3:-1048576}
threads=${4:-16}
run=${5:-tiertune-burst}
secs=600  # an upper bound: --max-objects ends each pass

bench() {
    rados -p "$pool" bench "$secs" write -b "$size" -t "$threads" --no-cleanup \
        --run-name "$run" --max-objects "$objects" "$@" 2>&1 \
        | grep -E '^(Total writes made|Bandwidth \(MB/sec\)|Average Latency\(s\)|Max latency\(s\))'
}

echo "pass 1: create $objects objects of $size bytes (proxied to the base, then promoted)"
bench
echo "pass 2: overwrite them (absorbed by the cache as dirty data)"
bench --reuse-bench
