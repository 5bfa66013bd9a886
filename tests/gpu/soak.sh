#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# The soak run, on a machine with an NVIDIA GPU: PyTorch training
# (tests/gpu/torch_soak.py, empty_cache every 50 steps so segments keep
# being freed and reallocated) under the shim with pin-on-alloc for
# SECONDS, the worker sampling the process every second
# (GDRHOOK_SAMPLE_MS). Then `gdrhook log check`, `log summary`, `log
# timeline` (OUT/soak.svg) and tests/gpu/soak_flat.py, which fails unless
# pinned bytes, open fds and resident memory stay flat after warm-up.
#   tests/gpu/soak.sh BUILD_DIR OUT_DIR [SECONDS]
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-soak}")
seconds=${3:-600}
here=$(dirname "$(realpath "$0")")
cli="$build/tools/gdrhook"
mkdir -p "$out"
rm -f "$out"/soak.*.jsonl

start=$(date +%s)
env GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_LOG_LEVEL=info GDRHOOK_SAMPLE_MS=1000 \
    GDRHOOK_EVENTS="$out/soak.%p.jsonl" LD_PRELOAD="$build/hook/libgdrhook.so" \
    python3 "$here/torch_soak.py" "$seconds" >"$out/train.out" 2>"$out/train.err"
rc=$?
echo "training: exit $rc after $(($(date +%s) - start)) s; $(tail -1 "$out/train.out")"
grep -h "gdrhook\[" "$out/train.err" | tail -3
failures=0
[ $rc -eq 0 ] || failures=$((failures + 1))
"$cli" log check "$out"/soak.*.jsonl || failures=$((failures + 1))
"$cli" log summary "$out"/soak.*.jsonl >"$out/summary.txt" 2>&1
cat "$out/summary.txt"
"$cli" log timeline -o "$out/soak.svg" "$out"/soak.*.jsonl || failures=$((failures + 1))
python3 "$here/soak_flat.py" "$out"/soak.*.jsonl || failures=$((failures + 1))
if [ $failures -eq 0 ]; then echo "SOAK: PASS"; else echo "SOAK: FAIL ($failures)"; fi
[ $failures -eq 0 ]
