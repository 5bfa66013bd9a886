#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# On the GPU machine: real programs in allocator modes that the table
# (tests/gpu/run.sh) does not run, each plain and under the shim
# (GDRHOOK_PIN=alloc, GDRHOOK_BACKEND=dmabuf, GDRHOOK_VERIFY=1). A mode
# passes when both runs exit 0, print the same stdout, and `gdrhook log
# check` passes the hooked run's log. A mode whose Python module is not
# installed is skipped, and a skip is not a pass.
#   usage: tests/gpu/modes.sh BUILD_DIR OUT_DIR
set -u
here=$(dirname "$(realpath "$0")")
build=$(realpath "${1:?usage: tests/gpu/modes.sh BUILD_DIR OUT_DIR}")
out=$(realpath -m "${2:?usage: tests/gpu/modes.sh BUILD_DIR OUT_DIR}")
shim="$build/hook/libgdrhook.so"
cli="$build/tools/gdrhook"
limit=${GDRHOOKTEST_GPU_TIMEOUT:-300}
for f in "$shim" "$cli"; do
    [ -e "$f" ] || { echo "modes.sh: no $f" >&2; exit 2; }
done
mkdir -p "$out"
passed=0 failed=0 skipped=()

# mode NAME MODULE [VAR=VALUE...] -- COMMAND...
mode() {
    local name=$1 module=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    if ! python3 -c "import $module" 2>/dev/null; then
        echo "$name: skipped, python3 cannot import $module"
        skipped+=("$name")
        return
    fi
    local dir="$out/$name" problems=()
    mkdir -p "$dir"
    rm -f "$dir"/events.*.jsonl
    env "${envs[@]}" timeout -k 10 "$limit" "$@" >"$dir/plain.out" 2>"$dir/plain.err"
    local plain_rc=$?
    env "${envs[@]}" GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf GDRHOOK_VERIFY=1 \
        GDRHOOK_EVENTS="$dir/events.%p.jsonl" LD_PRELOAD="$shim" \
        timeout -k 10 "$limit" "$@" >"$dir/hooked.out" 2>"$dir/hooked.err"
    local hooked_rc=$?
    [ "$plain_rc" = 0 ] || problems+=("plain exit $plain_rc")
    [ "$hooked_rc" = 0 ] || problems+=("hooked exit $hooked_rc")
    cmp -s "$dir/plain.out" "$dir/hooked.out" || problems+=("stdout differs")
    local check
    if compgen -G "$dir/events.*.jsonl" >/dev/null; then
        check=$("$cli" log check "$dir"/events.*.jsonl 2>&1) || problems+=("log check failed")
    else
        check="no event log"
        problems+=("no event log")
    fi
    if [ ${#problems[@]} = 0 ]; then
        passed=$((passed + 1))
        echo "$name: pass; $(tail -1 "$dir/hooked.out" | cut -c1-160)"
    else
        failed=$((failed + 1))
        echo "$name: FAIL: ${problems[*]} (see $dir)"
    fi
    echo "    $(echo "$check" | tail -1 | cut -c1-200)"
}

mode torch_async_graph torch PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- \
    python3 "$here/modes/torch_async_graph.py"
mode torch_default_graph torch -- python3 "$here/modes/torch_async_graph.py"
for allocator in async managed none; do
    mode "cupy_$allocator" cupy -- python3 "$here/modes/cupy_allocators.py" "$allocator"
done
mode jax_preallocate jax -- python3 "$here/modes/jax_allocators.py"
mode jax_cuda_async jax XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async -- \
    python3 "$here/modes/jax_allocators.py"

echo
[ ${#skipped[@]} = 0 ] || echo "skipped: ${skipped[*]}"
if [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then
    echo "MODES: PASS ($passed passed, ${#skipped[@]} skipped)"
else
    echo "MODES: FAIL ($passed passed, $failed failed, ${#skipped[@]} skipped)"
    exit 1
fi
