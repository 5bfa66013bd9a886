#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# Two builds of the shim against each other in one run, interleaved, so
# that the driver's drift between processes falls on both alike: the real
# driver's overhead per 1 MiB cuMemAlloc+cuMemFree pair (alloc_free_ab,
# nine processes each), then the shim's own cost over the fake driver
# (alloc_free_overhead back to back, fifteen rounds of plain, A and B).
#   tests/gpu/ab_shims.sh SHIM_A SHIM_B [BIN_DIR]
set -euo pipefail
here=$(dirname "$(realpath "$0")")
declare -A shim=([A]=$(realpath "$1") [B]=$(realpath "$2"))
bin=${3:-/tmp/gdrhook-ab-bin}
logs=$(mktemp -d /tmp/gdrhook-ab-logs.XXXXXX)
trap 'rm -rf "$logs"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$here/build_programs.sh" "$bin" >/dev/null
field() { grep -o "$1=[-0-9.]*" | head -1; }
hooked() { LD_PRELOAD=$1 GDRHOOK_EVENTS=$logs/e.%p.jsonl "${@:2}"; rm -f "$logs"/*; }
for _ in $(seq 9); do
    for side in A B; do
        echo "real $side $(hooked "${shim[$side]}" "$bin/alloc_free_ab" 40000 | field overhead_percent)"
    done
done
for _ in $(seq 15); do
    echo "fake plain $(LD_LIBRARY_PATH=$bin/fake "$bin/alloc_free_overhead" 50000 5 0 | field ns_per_pair)"
    for side in A B; do
        echo "fake $side $(LD_LIBRARY_PATH=$bin/fake hooked "${shim[$side]}" "$bin/alloc_free_overhead" 50000 5 0 | field ns_per_pair)"
    done
done | tee "$logs.fake"
python3 - "$logs.fake" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"fake (\w+) ns_per_pair=([\d.]+)", line)
    if m:
        runs.setdefault(m[1], []).append(float(m[2]))
ratios = [b / a for a, b in zip(runs["A"], runs["B"])]
print(f"fake driver, ns a pair, medians: plain {statistics.median(runs['plain']):.0f}, "
      f"A {statistics.median(runs['A']):.0f}, B {statistics.median(runs['B']):.0f}; "
      f"B/A pair by pair {statistics.median(ratios):.3f} ({min(ratios):.2f} to {max(ratios):.2f})")
PY
rm -f "$logs.fake"
