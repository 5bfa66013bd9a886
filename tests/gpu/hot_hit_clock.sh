#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/gpu/hot_hit_clock.sh BENCH [ROUNDS]: where the hot hit's two levels
# come from (docs/performance.md, "The hot hit and the core's clock").
# gdrhook-bench's hot hit, one thread at 65,536 registrations, moved
# between ~2.3 and ~3.9 ns from run to run with the same code. Each lookup
# row now carries the clock its cores ran at (tools/bench/core_clock.h), so
# this runs the hot hit, one process a round, on one CPU:
#   alone        nothing else running, ROUNDS processes (default 8);
#   beside N     N busy loops, each on a CPU of its own (N = 1, 3, 7 and
#                all the others): what the clock does as more cores run;
#   each other   one busy loop on each other CPU in turn: a CPU that slows
#                ours more than the rest shares its core (a hyperthread the
#                guest is not told of);
#   16 threads   the goal's 16-thread point, with its clocks.
# One line per process: the median ns of a hit, the core's clock, the adds
# a cycle it retired (its width this thread got), and the hit in cycles.
# Runs against the driver it finds (a GPU machine's); needs BENCH's libraries
# on LD_LIBRARY_PATH.
set -u
BENCH=${1:?usage: hot_hit_clock.sh BENCH [ROUNDS]}
ROUNDS=${2:-8}
cpus=$(nproc)
[ "$cpus" -ge 4 ] || { echo "hot_hit_clock: needs 4 CPUs at least, found $cpus"; exit 1; }
ours=2 # not CPU 0, which takes most interrupts
others=()
for ((c = 0; c < cpus; c++)); do [ $c = $ours ] || others+=("$c"); done

busy_pids=()
busy_on() { # CPUs...
    for c in "$@"; do
        taskset -c "$c" sh -c 'while :; do :; done' &
        busy_pids+=($!)
    done
}
quiet() {
    [ ${#busy_pids[@]} = 0 ] || kill "${busy_pids[@]}" 2>/dev/null
    wait "${busy_pids[@]}" 2>/dev/null
    busy_pids=()
}
trap quiet EXIT

# hot LABEL [THREADS]: one process; prints LABEL, ns, GHz, cycles.
hot() {
    local label=$1 threads=${2:-1} cpu_list=$ours
    [ "$threads" = 1 ] || cpu_list=0-$((cpus - 1))
    taskset -c "$cpu_list" "$BENCH" --json --caches gdrhook.lookup --entries "${GDRHOOKTEST_CLOCK_ENTRIES:-65536}" \
        --threads "$threads" --patterns hot --no-queue --no-unpin --rounds 0 --seconds 1 |
        python3 -c '
import json, sys
row = json.load(sys.stdin)["lookups"][0]
ns, ghz, width = row["median_ns"], row["core_ghz"], row["core_adds_per_cycle"]
print(f"{sys.argv[1]:24} {ns:6.2f} ns  {ghz:5.2f} GHz  {width:4.2f} adds/cycle  "
      f"{ns * ghz:5.1f} cycles")' "$label"
}

echo "== alone, CPU $ours, $ROUNDS processes"
for ((r = 1; r <= ROUNDS; r++)); do hot "alone $r"; done
echo "== beside N busy CPUs"
for n in 1 3 7 $((cpus - 1)); do
    [ "$n" -le $((cpus - 1)) ] || continue
    busy_on "${others[@]:0:$n}"
    hot "beside $n"
    hot "beside $n"
    quiet
done
echo "== one busy CPU at a time"
for c in "${others[@]}"; do
    busy_on "$c"
    hot "beside CPU $c"
    quiet
done
echo "== $cpus threads, one a CPU"
for r in 1 2 3; do hot "$cpus threads $r" "$cpus"; done
