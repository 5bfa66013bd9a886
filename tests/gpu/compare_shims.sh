#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Two or more builds of the shim side by side on a GPU: alloc_free_ab (the
# in-process comparison that overhead.py reports) under each, in ROUNDS
# rounds of one process per shim, the shims alternating, so that the
# driver's and the machine's drift falls on all of them alike. Prints, per
# shim, the median and mean over its processes of the overhead and each
# process's percentiles of the added time per pair.
#
# usage: compare_shims.sh ALLOC_FREE_AB ROUNDS PAIRS SHIM...
#   (ALLOC_FREE_AB: built by tests/gpu/build_programs.sh, or
#    g++ -O2 -I/usr/local/cuda/include tests/gpu/alloc_free_ab.cpp -lcuda)
set -euo pipefail
bench=$1 rounds=$2 pairs=$3
shift 3
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for round in $(seq "$rounds"); do
    for shim in "$@"; do
        out=$(GDRHOOK_EVENTS="$logs/events.%p.jsonl" LD_PRELOAD="$shim" "$bench" "$pairs" | tr '\n' ' ')
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
                       re.search(r"added_ns_percentiles (\S+ \S+ \S+ \S+ \S+)", line).group(1)))
for shim, results in runs.items():
    percents = [p for p, _ in results]
    print(f"{shim}: overhead median {statistics.median(percents):.3f}%, mean "
          f"{statistics.mean(percents):.3f}%, processes {min(percents):.3f}..{max(percents):.3f}%")
    for _, percentiles in results:
        print(f"    added ns {percentiles}")
'
