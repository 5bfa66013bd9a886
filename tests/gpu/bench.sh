#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# On the GPU machine: the full registration-cache benchmark (docs/performance.md) in one
# run, table on stdout, JSON to a file. The binary is built elsewhere (the
# GPU machine has no UCX) and carried with the UCX libraries it needs:
#   here:  meson setup build-bench -Dwerror=true &&
#          ninja -C build-bench tools/bench/gdrhook-bench &&
#          mkdir -p .carry/ucx &&
#          cp -L /lib/x86_64-linux-gnu/{libucs.so.0,libucm.so.0,libnuma.so.1} .carry/ucx/
#   there: tests/gpu/bench.sh build-bench /tmp/gdrhook-bench.json [.carry/ucx]
# 65,536 entries resident (and 16, 256, 4096), hot (the same 64 buffers) and
# random (all of them), 1 to 16 threads; the tag check calls the real
# driver; free-to-unpin with eventfd pins and with real dma-buf pins. 160
# timed points of 0.25 s plus setup (65,536 cuMemAlloc/cuMemFree, the tag
# check's untimed passes), then 5 rounds of the goals' 8 points measured
# back to back (tools/bench/targets.h): about two minutes. GDRHOOKTEST_BENCH_ARGS adds or
# overrides options (e.g. "--seconds 0.5"; later options win).
set -euo pipefail
here=$(dirname "$(realpath "$0")")
build=$(realpath "${1:?usage: tests/gpu/bench.sh BUILD_DIR JSON_OUT [UCX_LIB_DIR]}")
json=$(realpath -m "${2:?usage: tests/gpu/bench.sh BUILD_DIR JSON_OUT [UCX_LIB_DIR]}")
ucx=$(realpath -m "${3:-$here/../../.carry/ucx}")
bench="$build/tools/bench/gdrhook-bench"

[ -x "$bench" ] || { echo "bench.sh: no $bench (build tools/bench/gdrhook-bench first)" >&2; exit 1; }
if [ -d "$ucx" ]; then
    export LD_LIBRARY_PATH="$ucx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
    echo "bench.sh: no UCX library folder $ucx: the binary may not load" >&2
fi
if missing=$(ldd "$bench" | grep "not found"); then
    echo "bench.sh: $bench cannot load:" >&2
    echo "$missing" >&2
    exit 1
fi
# ucs_rcache's structures are compiled in from the build machine's headers:
# the libucs loaded must be the carried one, not a different UCX that may be
# installed here.
libucs=$(ldd "$bench" | awk '/libucs.so/ {print $3}')
if [ -n "$libucs" ] && [ "$(dirname "$(realpath "$libucs")")" != "$ucx" ]; then
    echo "bench.sh: libucs resolves to $libucs, not to $ucx" >&2
    exit 1
fi
mkdir -p "$(dirname "$json")"

echo "== $(hostname) $(date -u +%FT%TZ); libucs: ${libucs:-none}"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\))' || true
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
echo

queries() {
    local shim="$build/hook/libgdrhook.so"
    [ -f "$shim" ] || { echo "bench.sh: no $shim: no pointer-query figure" >&2; return 1; }
    local args=(--entries 4096 --threads 1 --patterns hot,random
                --caches gdrhook.lookup,tagcheck,query --seconds 0.5 --no-queue --no-unpin --rounds 0)
    "$bench" "${args[@]}" --json-out "${json%.json}.queries-plain.json" >/dev/null
    GDRHOOK_PIN=off LD_PRELOAD="$shim" "$bench" "${args[@]}" \
        --json-out "${json%.json}.queries-hooked.json" >/dev/null
    python3 "$here/pointer_query_ratios.py" "${json%.json}.queries-plain.json" \
        "${json%.json}.queries-hooked.json"
    # The guide's tag-check cache (tests/gpu/build_programs.sh's tag_check),
    # with the goal's verdict: per use, and the check alone.
    local tag="${GDRHOOKTEST_BENCH_BIN:-}/tag_check"
    [ -x "$tag" ] || { echo "bench.sh: no \$GDRHOOKTEST_BENCH_BIN/tag_check: no tag-check figure" >&2; return 0; }
    "$tag" 7 >"${json%.json}.tag-plain.txt"
    GDRHOOK_PIN=off LD_PRELOAD="$shim" "$tag" 7 >"${json%.json}.tag-hooked.txt"
    python3 "$here/tag_check_ratios.py" "${json%.json}.tag-plain.txt" "${json%.json}.tag-hooked.txt"
}
if [ "${GDRHOOKTEST_BENCH_ONLY:-}" = queries ]; then
    queries
    exit
fi

# shellcheck disable=SC2086 # GDRHOOKTEST_BENCH_ARGS is a list of options
"$bench" --entries 16,256,4096,65536 --threads 1,2,4,8,16 --patterns hot,random \
    --caches gdrhook.lookup,gdrhook.get_put,tagcheck,ucs_rcache --seconds 0.25 \
    --queue-producers 1,2,4,8,16 --unpin-backends eventfd,dmabuf --unpin-frees 4096 \
    ${GDRHOOKTEST_BENCH_ARGS:-} --json-out "$json"
echo
queries || echo "bench.sh: no pointer-query figure" >&2

# The figures a pinned free and a pair are held to besides the lookups
# (docs/performance.md): with GDRHOOKTEST_BENCH_SHIM (a built shim) and
# GDRHOOKTEST_BENCH_BIN (tests/gpu/build_programs.sh's programs), the
# coherence churn on 8 threads and on 1 (churn_ab.sh, 3 rounds) and the
# cost per 1 MiB pair (alloc_free_ab, 7 processes) under that shim, with
# its event log on; without them those two say "not measured". Then one
# verdict line a figure; the exit status is 1 unless every one was met.
verdicts=$(mktemp -d /tmp/gdrhook-bench-verdicts.XXXXXX)
trap 'rm -rf "$verdicts"' EXIT
if [ -n "${GDRHOOKTEST_BENCH_SHIM:-}" ] && [ -n "${GDRHOOKTEST_BENCH_BIN:-}" ]; then
    echo
    "$here/churn_ab.sh" "$GDRHOOKTEST_BENCH_BIN" 3 "$GDRHOOKTEST_BENCH_SHIM" | tee "$verdicts/churn"
    mkdir -p "$verdicts/logs"
    for n in 1 2 3 4 5 6 7; do
        echo "== process $n"
        LD_PRELOAD=$GDRHOOKTEST_BENCH_SHIM GDRHOOK_EVENTS="$verdicts/logs/e.%p.jsonl" \
            "$GDRHOOKTEST_BENCH_BIN/alloc_free_ab" 40000
        rm -f "$verdicts"/logs/*
    done >"$verdicts/overhead"
    grep -h "overhead_percent" "$verdicts/overhead"
fi
echo
python3 "$here/bench_verdicts.py" "$json" "$verdicts/churn" "$verdicts/overhead"
