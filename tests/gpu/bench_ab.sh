#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# On the GPU machine: the lookup figures of two builds side by side, in one
# run (a change that must not move them, issue 40). Each round runs the
# previous build's gdrhook-bench, then this one's, over the same points
# (gdrhook.lookup and gdrhook.get_put, hot and random, 4,096 and 65,536
# entries, 1 and 16 threads, on GPU memory when a GPU is there); the table
# gives each point's median over the rounds and the ratio this/previous
# (median time: below 1 is faster).
#   tests/gpu/bench_ab.sh PREVIOUS_BUILD THIS_BUILD OUT_DIR [ROUNDS]
# Each build needs tools/bench/gdrhook-bench; a build without UCX is enough
# (ucs_rcache is not among these points).
set -euo pipefail
here=$(dirname "$(realpath "$0")")
usage="usage: tests/gpu/bench_ab.sh PREVIOUS_BUILD THIS_BUILD OUT_DIR [ROUNDS]"
previous=$(realpath "${1:?$usage}")
this=$(realpath "${2:?$usage}")
out=$(realpath -m "${3:?$usage}")
rounds=${4:-5}
for build in "$previous" "$this"; do
    [ -x "$build/tools/bench/gdrhook-bench" ] ||
        { echo "bench_ab.sh: no $build/tools/bench/gdrhook-bench" >&2; exit 1; }
done
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
    for side in previous this; do
        build=$previous
        [ "$side" = this ] && build=$this
        "$build/tools/bench/gdrhook-bench" --entries 4096,65536 --threads 1,16 \
            --patterns hot,random --caches gdrhook.lookup,gdrhook.get_put --seconds 0.25 \
            --rounds 1 --no-queue --no-unpin --json-out "$out/$side.$round.json" >/dev/null
    done
done
python3 "$here/bench_ab.py" "$out" "$rounds"
