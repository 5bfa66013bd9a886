#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# On a machine with an NVIDIA GPU: runs real programs with and without the
# shim and prints one table. Each program either prints "frees_made=N" on
# stdout (its own count of deallocations) or "expect KEY=N" /
# "expect_min KEY=N" / "expect_same KEY KEY" lines on stderr, checked
# against what the event log shows (tests/gpu/count_events.py). Output and
# exit code must be the same with and without the shim. Exits non-zero on
# any mismatch.
#   tests/gpu/run.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-gpu}")
here=$(dirname "$(realpath "$0")")
shim="$build/hook/libgdrhook.so"
mkdir -p "$out"
failures=0

"$here/build_programs.sh" "$out/bin" || exit 1

row() { printf '%-22s %-9s %-9s %-8s %-8s %-8s %s\n' "$@"; }
row program frees made match output exit notes
row ------- ----- ---- ----- ------ ---- -----

run_case() { # name window(0|1) env... -- command...
    local name=$1 window=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local dir="$out/$name"
    mkdir -p "$dir"
    rm -f "$dir"/events.*
    env "${envs[@]}" "$@" >"$dir/plain.out" 2>"$dir/plain.err"
    local plain_rc=$?
    env "${envs[@]}" LD_PRELOAD="$shim" GDRHOOK_EVENTS="$dir/events.%p.jsonl" \
        GDRHOOK_LOG_LEVEL=info "$@" >"$dir/hooked.out" 2>"$dir/hooked.err"
    local hooked_rc=$?
    local flag=""
    [ "$window" = 1 ] && flag=--window
    python3 "$here/count_events.py" "$dir"/events.*.jsonl $flag >"$dir/counts.json" 2>"$dir/count.err"
    python3 "$here/count_events.py" "$dir"/events.*.jsonl $flag --list >"$dir/frees.txt" 2>>"$dir/count.err"
    python3 - "$name" "$dir" "$plain_rc" "$hooked_rc" <<'PY'
import json, re, sys
name, d, plain_rc, hooked_rc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
counts = json.load(open(f"{d}/counts.json"))
plain_out = open(f"{d}/plain.out").read()
hooked_out = open(f"{d}/hooked.out").read()
problems, made = [], "-"
m = re.search(r"frees_made=(\d+)", plain_out)
if m:
    made = int(m.group(1))
    if counts["frees"] != made:
        problems.append(f"frees {counts['frees']} != {made}")
for line in open(f"{d}/plain.err"):
    parts = line.split()
    if not parts or parts[0] not in ("expect", "expect_min", "expect_same"):
        continue
    if parts[0] == "expect_same":
        a, b = parts[1], parts[2]
        if counts[a] != counts[b]:
            problems.append(f"{a} {counts[a]} != {b} {counts[b]}")
        continue
    key, value = parts[1].split("=")
    value = int(value)
    if key == "frees":
        made = value if parts[0] == "expect" else f">={value}"
    if parts[0] == "expect" and counts[key] != value:
        problems.append(f"{key} {counts[key]} != {value}")
    if parts[0] == "expect_min" and counts[key] < value:
        problems.append(f"{key} {counts[key]} < {value}")
same_out = plain_out == hooked_out
same_rc = plain_rc == hooked_rc == 0
if not same_out:
    problems.append("stdout differs")
if not same_rc:
    problems.append(f"exit {plain_rc}/{hooked_rc}")
notes = "; ".join(problems) or ", ".join(f"{k}={v}" for k, v in counts["frees_by_api"].items())
print(f"{name:22} {counts['frees']:<9} {str(made):<9} {'yes' if not problems else 'NO':8} "
      f"{'same' if same_out else 'DIFF':8} {plain_rc}/{hooked_rc:<6} {notes}")
sys.exit(1 if problems else 0)
PY
    [ $? -eq 0 ] || failures=$((failures + 1))
}

cudart_dir=/usr/local/cuda/lib64
run_case driver_api 1 -- "$out/bin/driver_api"
run_case runtime_static 1 -- "$out/bin/runtime_static"
run_case runtime_shared 1 LD_LIBRARY_PATH=$cudart_dir -- "$out/bin/runtime_shared"
if python3 -c 'import torch' 2>/dev/null; then
    run_case torch_default 1 -- python3 "$here/torch_check.py"
    run_case torch_expandable 1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- python3 "$here/torch_check.py"
fi
if python3 -c 'import cupy' 2>/dev/null; then
    run_case cupy 1 -- python3 "$here/cupy_check.py"
fi
if python3 -c 'import jax' 2>/dev/null; then
    run_case jax 1 -- python3 "$here/jax_check.py"
fi

echo
echo "overhead of the shim on cuMemAlloc+cuMemFree (1 MiB) pairs"
python3 "$here/overhead.py" "$out/bin" "$shim"
echo
[ $failures -eq 0 ] && echo "GPU MATRIX: PASS" || echo "GPU MATRIX: FAIL ($failures)"
exit $failures
