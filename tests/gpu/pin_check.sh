#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Issue 3 on a machine with an NVIDIA GPU: the registration cache inside
# real programs. Runs
#   1. coherence_churn: threads free and reallocate one size in a loop with
#      lookups in between; under the shim (GDRHOOK_PIN=alloc, dmabuf,
#      verify) no lookup may be stale and GPU memory must come back; the
#      same churn with a naive cache and no hook, for comparison;
#   2. the GPU matrix (tests/gpu/run.sh) with GDRHOOK_PIN=alloc
#      GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY=1, then `gdrhook log check` on
#      every program's log and the verify and pinned-bytes figures of its
#      exit report.
# Exits non-zero on any stale lookup, verify finding, failed check or kept
# memory.
#   tests/gpu/pin_check.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-pin}")
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
shim="$build/hook/libgdrhook.so"
cli="$build/tools/gdrhook"
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out/bin"
failures=0

g++ -O2 -I"$root" -I"$cuda/include" "$root/tests/programs/coherence_churn.cpp" \
    -L"$cuda/lib64/stubs" -lcuda -lpthread -ldl -o "$out/bin/coherence_churn" || exit 1

echo "== coherence: 8 threads x 500 free/alloc/lookup of 64 MiB"
pinned_env=(GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY=1 GDRHOOK_LOG_LEVEL=info)
env "${pinned_env[@]}" GDRHOOK_EVENTS="$out/coherence.jsonl" LD_PRELOAD="$shim" \
    "$out/bin/coherence_churn" gdrhook 8 500 64 2>"$out/coherence.err" | tee "$out/coherence.out"
grep -E "backend|cache \(" "$out/coherence.err"
"$out/bin/coherence_churn" naive 8 500 64 | tee "$out/naive.out"
grep -q " stale=0 verify_mismatches=0 used_delta_bytes=0$" "$out/coherence.out" ||
    { echo "coherence: FAIL"; failures=$((failures + 1)); }
"$cli" log check "$out/coherence.jsonl" || failures=$((failures + 1))
"$cli" log summary "$out/coherence.jsonl" | sed -n '/unpin delay/,/^$/p'

echo
echo "== the GPU matrix with ${pinned_env[*]}"
env "${pinned_env[@]}" "$here/run.sh" "$build" "$out/matrix" >"$out/matrix.txt" 2>&1
matrix_rc=$?
grep -v "^overhead\|^  " "$out/matrix.txt" | sed '/^$/q'
[ $matrix_rc -eq 0 ] || failures=$((failures + 1))
printf '%-18s %-7s %-7s %-9s %-24s %-14s %s\n' program pins unpins stale check "pinned peak/exit" "mem delta plain/hooked"
for dir in "$out"/matrix/*/; do
    name=$(basename "$dir")
    ls "$dir"/events.*.jsonl >/dev/null 2>&1 || continue
    pins=$(cat "$dir"/events.*.jsonl | grep -c '"ev":"pin"')
    unpins=$(cat "$dir"/events.*.jsonl | grep -c '"ev":"unpin"')
    stale=$(grep -ho "[0-9]* stale hits" "$dir/hooked.err" | awk '{s+=$1} END {print s+0}')
    if "$cli" log check "$dir"/events.*.jsonl >"$dir/check.txt" 2>&1; then check=pass; else
        check=FAIL; failures=$((failures + 1)); fi
    peak=$(grep -ho "peak [0-9]*, at exit [0-9]*" "$dir/hooked.err" | sed 's/peak //; s/, at exit /\//' | paste -sd,)
    delta_plain=$(grep -ho "mem_used_delta=-\?[0-9]*" "$dir/plain.err" | cut -d= -f2)
    delta_hooked=$(grep -ho "mem_used_delta=-\?[0-9]*" "$dir/hooked.err" | cut -d= -f2)
    [ "$stale" = 0 ] || failures=$((failures + 1))
    printf '%-18s %-7s %-7s %-9s %-24s %-14s %s\n' "$name" "$pins" "$unpins" "$stale" "$check" \
        "${peak:--}" "${delta_plain:--}/${delta_hooked:--}"
done
[ $failures -eq 0 ] && echo "PIN CHECK: PASS" || echo "PIN CHECK: FAIL ($failures)"
exit $failures
