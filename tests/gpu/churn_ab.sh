#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The coherence churn of tests/gpu/run.sh (8 threads each freeing,
# reallocating and looking up 64 MiB buffers, pinned on allocation through
# dma-buf) under two or more builds of the shim, interleaved round by round
# so that the machine's drift falls on all of them alike; and the same
# churn on one thread, the floor a free's unpin is judged against.
#   tests/gpu/churn_ab.sh BIN_DIR ROUNDS SHIM... 
# BIN_DIR holds coherence_churn (tests/gpu/build_programs.sh builds it).
# Each run prints the unpin delay of its log (each `unpin` line's lat_ns,
# from the invalidation to the release's end): p50, p99, max in us, and its
# stale lookups; then each shim's medians over the rounds and, pair by
# pair, its p99 over the first shim's; and the release alone: the same
# churn without the shim, the program closing its own dma-bufs
# (coherence_churn own_export), the floor a pinned free's unpin is
# compared with. GDRHOOKTEST_CHURN_PROFILE=1 adds,
# for each shim, one run with GDRHOOK_PROFILE=1 and prints its profile
# (a shim without the profile warns of an unknown variable and prints none).
set -euo pipefail
usage="usage: tests/gpu/churn_ab.sh BIN_DIR ROUNDS SHIM..."
bin=$(realpath "${1:?$usage}")
rounds=${2:?$usage}
shift 2
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
shims=()
for s in "$@"; do shims+=("$(realpath "$s")"); done
logs=$(mktemp -d /tmp/gdrhook-churn-ab.XXXXXX)
trap 'rm -rf "$logs"' EXIT
# Verify mode asks the driver for each hit's buffer ID: the tag check the
# shim exists to spare, and a driver call more in the race the figures
# time. Off unless GDRHOOKTEST_CHURN_VERIFY=1; the program's own check
# (each lookup's buffer ID against the driver's) counts stale hits either
# way.
hook_env=(GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY="${GDRHOOKTEST_CHURN_VERIFY:-0}")

# One churn: THREADS SHIM_INDEX LABEL [ENV...]; prints one line.
churn() {
    local threads=$1 index=$2 label=$3
    shift 3
    rm -f "$logs"/e.*.jsonl
    local out
    out=$(env "${hook_env[@]}" "$@" GDRHOOK_EVENTS="$logs/e.%p.jsonl" \
        LD_PRELOAD="${shims[$index]}" timeout -k 10 600 "$bin/coherence_churn" gdrhook \
        "$threads" 500 64 2>"$logs/err") || true
    local stale
    stale=$(grep -o 'stale=[0-9]*' <<<"$out" || echo "stale=?")
    python3 - "$label" "$index" "$threads" "$stale" "$logs" <<'PY'
import glob, json, sys
label, index, threads, stale, logs = sys.argv[1:]
lat = sorted(json.loads(l)["lat_ns"] / 1000 for f in glob.glob(logs + "/e.*.jsonl")
             for l in open(f) if '"ev":"unpin"' in l)
def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print(f"{label} shim={index} threads={threads} unpins={len(lat)} p50_us={pct(0.5):.1f} "
      f"p99_us={pct(0.99):.1f} max_us={(lat[-1] if lat else float('nan')):.1f} {stale}")
PY
}

# The release alone, under the same churn, without the shim: the program
# exports each buffer as it allocates it and closes the dma-buf right
# before freeing it (coherence_churn own_export): THREADS LABEL.
release() {
    local out
    out=$(timeout -k 10 600 "$bin/coherence_churn" own_export "$1" 500 64 2>&1) || true
    echo "$2 $(grep -o 'releases=.*' <<<"$out" || echo "releases=? ${out//$'\n'/ }")"
}

echo "churn_ab: $rounds rounds, shims:"
for i in "${!shims[@]}"; do echo "  $i ${shims[$i]}"; done
for _ in $(seq "$rounds"); do
    for i in "${!shims[@]}"; do
        churn 8 "$i" churn8
        churn 1 "$i" churn1
    done
    release 8 release8
    release 1 release1
done | tee "$logs/runs"
python3 - "$logs/runs" <<'PY'
import re, statistics, sys
# Each shim's runs, and the release alone's (the floor: what a close costs
# under the same churn with no shim at all).
runs, alone = {}, {}
for line in open(sys.argv[1]):
    if m := re.match(r"(churn\d) shim=(\d+) .* p50_us=([\d.na]+) p99_us=([\d.na]+)", line):
        runs.setdefault((m[1], int(m[2])), []).append((float(m[3]), float(m[4])))
    elif m := re.match(r"(release\d) releases=\d+ release_p50_us=([\d.]+) release_p99_us=([\d.]+)", line):
        alone.setdefault(m[1], []).append((float(m[2]), float(m[3])))
shims = sorted({s for _, s in runs})
for s in shims:
    eight, one = runs[("churn8", s)], runs[("churn1", s)]
    p99_8 = statistics.median(p for _, p in eight)
    p99_1 = statistics.median(p for _, p in one)
    line = (f"shim {s}: 8 threads p50 {statistics.median(p for p, _ in eight):.1f} us, "
            f"p99 {p99_8:.1f} us; 1 thread p99 {p99_1:.1f} us; 8/1 p99 {p99_8 / p99_1:.2f}x")
    if s:
        ratios = [b[1] / a[1] for a, b in zip(runs[("churn8", 0)], eight)]
        line += f"; p99 over shim 0, pair by pair {statistics.median(ratios):.3f}"
    print(line)
if "release8" in alone and "release1" in alone:
    print(f"the release alone (the program's own dma-buf close, no shim): 8 threads p50 "
          f"{statistics.median(p for p, _ in alone['release8']):.1f} us, p99 "
          f"{statistics.median(p for _, p in alone['release8']):.1f} us; 1 thread p99 "
          f"{statistics.median(p for _, p in alone['release1']):.1f} us")
PY
if [ "${GDRHOOKTEST_CHURN_PROFILE:-0}" = 1 ]; then
    for i in "${!shims[@]}"; do
        echo "profile of shim $i (8 threads):"
        churn 8 "$i" profiled8 GDRHOOK_PROFILE=1
        grep -o 'profile: .*' "$logs/err" || echo "  (no profile)"
    done
fi
