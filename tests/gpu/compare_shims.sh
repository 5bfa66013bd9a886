#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Two or more builds of the shim side by side on a GPU: alloc_free_ab (the
# in-process comparison that overhead.py reports) under each, in ROUNDS
# rounds of one process per shim, the shims alternating, so that the
# driver's and the machine's drift falls on all of them alike. Prints, per
# shim, the median and mean over its processes of the overhead, the median
# of their median added ns a pair, and each process's percentiles of the
# added time per pair.
#
# usage: compare_shims.sh ALLOC_FREE_AB ROUNDS PAIRS SHIM[:VAR=VALUE]...
#   A shim given as SHIM:VAR=VALUE runs with VAR=VALUE in its environment
#   (the same shim with GDRHOOK_DISABLE=1, say); it is named as given.
#   (ALLOC_FREE_AB: built by tests/gpu/build_programs.sh, or
#    g++ -O2 -I/usr/local/cuda/include tests/gpu/alloc_free_ab.cpp -lcuda)
set -euo pipefail
bench=$1 rounds=$2 pairs=$3
shift 3
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for round in $(seq "$rounds"); do
    for shim in "$@"; do
        setting=()
        case $shim in *:*=*) setting=("${shim#*:}");; esac
        out=$(env "${setting[@]}" GDRHOOK_EVENTS="$logs/events.%p.jsonl" LD_PRELOAD="${shim%%:*}" \
            "$bench" "$pairs" | tr '\n' ' ')
        rm -f "$logs"/events.*
        case $out in *hooked_symbols=yes*) ;; *) echo "$shim: alloc_free_ab did not go through it" >&2; exit 1;; esac
        echo "shim=$shim round=$round $out"
    done
done | python3 -c '
import re, statistics, sys, collections
runs = collections.defaultdict(list)
for line in sys.stdin:
    shim = re.search(r"shim=(\S+)", line).group(1)
    runs[shim].append((float(re.search(r"overhead_percent=([-\d.]+)", line).group(1)),
                       float(re.search(r"added_ns_median=([-\d.]+)", line).group(1)),
                       re.search(r"added_ns_percentiles (\S+ \S+ \S+ \S+ \S+)", line).group(1)))
for shim, results in runs.items():
    percents = [p for p, _, _ in results]
    print(f"{shim}: overhead median {statistics.median(percents):.3f}%, mean "
          f"{statistics.mean(percents):.3f}%, processes {min(percents):.3f}..{max(percents):.3f}%; "
          f"added ns, median of the processes\x27 medians {statistics.median(a for _, a, _ in results):.1f}")
    for _, _, percentiles in results:
        print(f"    added ns {percentiles}")
'
