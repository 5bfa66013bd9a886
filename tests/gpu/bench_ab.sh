#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# On the GPU machine: the lookup figures of two builds side by side, in one
# run (a change that must not move them, issue 40). Each round runs the
# previous build's gdrhook-bench and this one's over the same points
# (gdrhook.lookup and gdrhook.get_put, hot and random, 1 and 16 threads, on
# GPU memory when a GPU is there); the table gives each point's median over
# the rounds and the ratio this/previous (median time: below 1 is faster).
#   tests/gpu/bench_ab.sh PREVIOUS_BUILD THIS_BUILD OUT_DIR [ROUNDS [ENTRIES]]
# ENTRIES: a comma list, 4096,65536 by default. Each build needs
# tools/bench/gdrhook-bench; a build without UCX is enough (ucs_rcache is
# not among these points).
# The pointer queries of two shims instead: GDRHOOKTEST_AB_PRELOAD=1 runs
# each side's bench under its own build's hook/libgdrhook.so (pins off),
# GDRHOOKTEST_AB_CACHES names the points' caches (e.g. query,tagcheck) and
# GDRHOOKTEST_AB_THREADS the thread counts ("1 16" by default).
#
# Why the rounds are arranged so: on the H200 machine one binary's
# single-thread hot lookup moved between 2.3 and 4.3 ns from one process to
# the next (two runs of 5 and 7 rounds disagreed, geometric means 1.198 and
# 0.979), far more than any difference between builds. So the single-thread
# points run in a process of their own pinned to one CPU (the same CPU for
# both builds: no turbo or cache-slice difference between cores), the
# 16-thread points in another, unpinned; and the order alternates
# previous-this, this-previous (ABBA), so a drift of the machine over the
# run weighs on both sides alike.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
usage="usage: tests/gpu/bench_ab.sh PREVIOUS_BUILD THIS_BUILD OUT_DIR [ROUNDS [ENTRIES]]"
previous=$(realpath "${1:?$usage}")
this=$(realpath "${2:?$usage}")
out=$(realpath -m "${3:?$usage}")
rounds=${4:-5}
entries=${5:-4096,65536}
for build in "$previous" "$this"; do
    [ -x "$build/tools/bench/gdrhook-bench" ] ||
        { echo "bench_ab.sh: no $build/tools/bench/gdrhook-bench" >&2; exit 1; }
done
# The CPU the single-thread points run on: the last one this process may
# use (CPU 0 takes most interrupts).
cpu=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | tail -1 | sed 's/.*-//')
mkdir -p "$out"
echo "bench_ab: $rounds rounds, entries $entries, single-thread points on CPU $cpu"
measure() { # side round threads [taskset args]
    local side=$1 round=$2 threads=$3 build=$previous
    shift 3
    [ "$side" = this ] && build=$this
    local preload=()
    [ "${GDRHOOKTEST_AB_PRELOAD:-0}" = 1 ] &&
        preload=(env GDRHOOK_PIN=off "LD_PRELOAD=$build/hook/libgdrhook.so")
    "$@" "${preload[@]}" "$build/tools/bench/gdrhook-bench" --entries "$entries" \
        --threads "$threads" --patterns hot,random \
        --caches "${GDRHOOKTEST_AB_CACHES:-gdrhook.lookup,gdrhook.get_put}" --seconds 0.25 \
        --rounds 0 --no-queue --no-unpin --json-out "$out/$side.$round.t$threads.json" >/dev/null
}
for round in $(seq 1 "$rounds"); do
    order="previous this"
    [ $((round % 2)) = 0 ] && order="this previous"
    for side in $order; do
        for threads in ${GDRHOOKTEST_AB_THREADS:-1 16}; do
            if [ "$threads" = 1 ]; then
                measure "$side" "$round" 1 taskset -c "$cpu"
            else
                measure "$side" "$round" "$threads"
            fi
        done
    done
done
python3 "$here/bench_ab.py" "$out" "$rounds"
