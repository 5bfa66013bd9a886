#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# One command, on a machine with an NVIDIA GPU: runs every real
# program with and without the shim and prints one table, a row per
# program and allocator mode:
#   frees seen/made   successful free events in the log (between the
#                     markers of tests/gpu/marker.py) / the deallocations
#                     the program says it made
#   pins, unpins      over the whole logs; must be equal
#   verify            stale cache hits verify mode caught; must be 0
#   mem MiB           GPU memory in use at exit minus at start (cuMemGetInfo,
#                     the program's mem_used_delta=N), plain/hooked; hooked
#                     may exceed plain by at most 2 MiB
#   check             `gdrhook log check` of the logs
#   stdout, exit      stdout the same, both exit statuses 0
#   time x            wall time hooked / plain
# With two or more GPUs, rows for peer access, a pool shared between GPUs,
# IPC between GPUs and torchrun with NCCL, plain and with NCCL_DEBUG=INFO
# (tests/gpu/two_gpus.cpp, ipc.cu,
# ddp_check.py).
# (tests/gpu/table_row.py judges a row.) Then the coherence churn
# (threads freeing and reallocating with lookups in between, no stale
# lookup, memory back; a pinned buffer's memory free when its cuMemFree
# returns) and the shim's overhead on alloc/free pairs.
#
# The hooked runs use GDRHOOK_PIN=alloc GDRHOOK_BACKEND=dmabuf
# GDRHOOK_VERIFY=1 GDRHOOK_LOG_LEVEL=info unless the caller's environment
# sets them, and GDRHOOK_EVENTS=OUT/PROGRAM/events.%p.jsonl.
#
# GDRHOOKTEST_GPU_ROWS="NAME..." runs only those rows (coherence counts as
# one), for a quick look at a few; a full run leaves it unset.
#
# Exits non-zero on any mismatch, 77 (a skip, for `meson test --suite gpu`)
# when no GPU is usable.
#   tests/gpu/run.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-gpu}")
here=$(dirname "$(realpath "$0")")
shim="$build/hook/libgdrhook.so"
cli="$build/tools/gdrhook"
limit=${GDRHOOKTEST_GPU_TIMEOUT:-900} # seconds, per run

# shellcheck source=tests/gpu/opening_checks.sh
. "$here/opening_checks.sh"
skip_without_gpu
[ -f "$shim" ] || { echo "no shim at $shim: build first"; exit 1; }
mkdir -p "$out"
"$here/build_programs.sh" "$out/bin" || { echo "building the programs failed"; exit 1; }

hook_env=(
    GDRHOOK_PIN="${GDRHOOK_PIN:-alloc}"
    GDRHOOK_BACKEND="${GDRHOOK_BACKEND:-dmabuf}"
    GDRHOOK_VERIFY="${GDRHOOK_VERIFY:-1}"
    GDRHOOK_LOG_LEVEL="${GDRHOOK_LOG_LEVEL:-info}"
)
failures=0
skipped=()
rows_wanted=${GDRHOOKTEST_GPU_ROWS:-}
wanted() { [ -z "$rows_wanted" ] || [[ " $rows_wanted " == *" $1 "* ]]; }

echo "hooked runs: ${hook_env[*]}"
echo
python3 "$here/table_row.py" --header

now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# run_case NAME MODE WINDOW(0|1) [VAR=VALUE...] -- COMMAND...
run_case() {
    local name=$1 mode=$2 window=$3
    wanted "$name" || return 0
    shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local dir="$out/$name"
    mkdir -p "$dir"
    rm -f "$dir"/events.*.jsonl
    local t0 t1 t2 plain_rc hooked_rc
    t0=$(now)
    env "${envs[@]}" timeout -k 10 "$limit" "$@" >"$dir/plain.out" 2>"$dir/plain.err"
    plain_rc=$?
    t1=$(now)
    if [ "${hook_through_cli:-0}" = 1 ]; then # `gdrhook run` sets GDRHOOK_EVENTS, LD_PRELOAD
        env "${envs[@]}" "${hook_env[@]}" timeout -k 10 "$limit" "$cli" run \
            --library "$shim" --events "$dir/events.%p.jsonl" --no-summary -- "$@" \
            >"$dir/hooked.out" 2>"$dir/hooked.err"
    elif [[ "${hook_through_cli:-0}" == inside:* ]]; then
        # The first N words are a tool that starts the rest: `gdrhook run`
        # goes between the tool and the program.
        local n=${hook_through_cli#inside:}
        env "${envs[@]}" "${hook_env[@]}" timeout -k 10 "$limit" "${@:1:n}" "$cli" run \
            --library "$shim" --events "$dir/events.%p.jsonl" --no-summary -- "${@:n+1}" \
            >"$dir/hooked.out" 2>"$dir/hooked.err"
    else
        env "${envs[@]}" "${hook_env[@]}" GDRHOOK_EVENTS="$dir/events.%p.jsonl" \
            LD_PRELOAD="$shim" timeout -k 10 "$limit" "$@" >"$dir/hooked.out" 2>"$dir/hooked.err"
    fi
    hooked_rc=$?
    t2=$(now)
    GDRHOOK_PIN="${GDRHOOK_PIN:-alloc}" \
        python3 "$here/table_row.py" "$name" "$mode" "$dir" "$window" "$plain_rc" "$hooked_rc" \
        "$(seconds "$t0" "$t1")" "$(seconds "$t1" "$t2")" "$cli" ||
        failures=$((failures + 1))
}

# python_case NAME MODE MODULE [VAR=VALUE...] -- SCRIPT: skipped, not
# failed, when MODULE is not installed.
python_case() {
    local name=$1 mode=$2 module=$3
    shift 3
    if python3 -c "import $module" 2>/dev/null; then
        run_case "$name" "$mode" 1 "$@"
    else
        echo "$name: skipped, python3 cannot import $module"
        skipped+=("$name")
    fi
}

bin="$out/bin"
cudart_dir=${CUDA_HOME:-/usr/local/cuda}/lib64
run_case driver_api - 1 -- "$bin/driver_api"
run_case ctx_destroy pins-held 0 -- "$bin/ctx_destroy"
run_case runtime_static async-pool 1 -- "$bin/runtime_static"
run_case runtime_shared async-pool 1 LD_LIBRARY_PATH="$cudart_dir" -- "$bin/runtime_shared"
run_case ipc ipc 1 -- "$bin/ipc"
# Stream capture in global mode with graph memory, launched many times;
# a stream-ordered pool under pin-on-alloc, half its allocations looked up
# by a library once valid; compressible VMM memory.
run_case capture_graph graph-global 0 -- "$bin/capture_graph" graph
run_case stream_pool pool 0 -- "$bin/capture" pool_lookup 500
run_case compressible comp-generic 0 -- "$bin/capture" compressible
# Graph memory released by the calls that release it, with a library's
# registration (gdrhook_get) over it: built by hand with allocation and
# free nodes and trimmed after 100 launches; its executable graph
# destroyed; the graph destroyed and its address allocated again; the same
# with a captured graph; an allocation node that outlives its graph.
# (capture_graph above: captured cudaMallocAsync/cudaFreeAsync, 200
# launches, cudaDeviceGraphMemTrim.)
for mode in trim executable destroy captured outlives; do
    run_case "graph_$mode" graph-nodes 0 -- "$bin/graph_memory" "$mode"
done
# Page-locked host memory: pinned through dma-buf under pin-on-alloc where
# the device reports HOST_ALLOC_DMA_BUF_SUPPORTED (stdout says which),
# else a skip; freed with an unpin.
run_case pinned_host host-dmabuf 0 -- "$bin/pinned_host"
# Frees the driver refuses (inside a pinned allocation, of no allocation):
# the program exits 0 only if each was refused; the frees made are the
# two real ones after them.
run_case refused_frees refused 0 -- "$bin/refused_frees"
python_case torch_default default torch -- python3 "$here/torch_check.py"
python_case torch_expandable expandable torch \
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- python3 "$here/torch_check.py"
python_case torch_graph cuda-graph torch -- python3 "$here/torch_graph_check.py"
# No exit handler runs: every free must still be in the log.
python_case torch_os_exit os._exit torch -- python3 "$here/torch_endings.py" os_exit
python_case cupy default cupy -- python3 "$here/cupy_check.py"
python_case jax platform jax -- python3 "$here/jax_check.py"
# Under NVIDIA's injection-based tools: the plain run is the program under
# the tool alone, the hooked run the same with the shim, so output, exit
# status and the tool's own findings must match, and the frees logged must
# be the frees made, as without the tool. A tool that is not installed is
# a skip with its reason.
tools_dir=${CUDA_HOME:-/usr/local/cuda}/bin
tool_rows() { # TOOL ROW... : whether TOOL is here; if not, its rows are skips
    local tool=$1
    shift
    if command -v "$tool" >/dev/null 2>&1 || [ -x "$tools_dir/$tool" ]; then return 0; fi
    echo "$*: skipped, $tool is not installed here"
    skipped+=("$@")
    return 1
}
sanitizer=$(command -v compute-sanitizer || echo "$tools_dir/compute-sanitizer")
if tool_rows compute-sanitizer cs_driver_api cs_runtime_static cs_runtime_shared cs_racecheck \
        cs_initcheck cs_synccheck cs_torch cs_cli_outside cs_cli_inside; then
    run_case cs_driver_api memcheck 1 -- "$sanitizer" --tool memcheck "$bin/driver_api"
    run_case cs_runtime_static memcheck 1 -- "$sanitizer" --tool memcheck "$bin/runtime_static"
    run_case cs_runtime_shared memcheck 1 LD_LIBRARY_PATH="$cudart_dir" -- \
        "$sanitizer" --tool memcheck "$bin/runtime_shared"
    run_case cs_racecheck racecheck 1 -- "$sanitizer" --tool racecheck "$bin/runtime_static"
    run_case cs_initcheck initcheck 1 -- "$sanitizer" --tool initcheck "$bin/driver_api"
    run_case cs_synccheck synccheck 1 -- "$sanitizer" --tool synccheck "$bin/runtime_static"
    python_case cs_torch memcheck torch -- "$sanitizer" --tool memcheck python3 "$here/torch_check.py"
    # Started through `gdrhook run`, both ways round: `gdrhook run -- TOOL
    # PROGRAM` and `TOOL gdrhook run -- PROGRAM`.
    hook_through_cli=1 run_case cs_cli_outside memcheck 1 -- \
        "$sanitizer" --tool memcheck "$bin/driver_api"
    hook_through_cli=inside:3 run_case cs_cli_inside memcheck 1 -- \
        "$sanitizer" --tool memcheck "$bin/driver_api"
fi
ncu_bin=$(command -v ncu || echo "$tools_dir/ncu")
if tool_rows ncu ncu_runtime; then
    # One kernel, its launch statistics: figures that do not vary by run.
    run_case ncu_runtime "ncu -c 1" 1 -- "$ncu_bin" -c 1 --section LaunchStats "$bin/runtime_static"
fi
nsys_bin=$(command -v nsys || echo "$tools_dir/nsys")
if tool_rows nsys nsys_runtime; then
    run_case nsys_runtime "nsys cuda" 1 -- "$nsys_bin" profile -t cuda --force-overwrite true \
        -o "$out/nsys_runtime/report" "$bin/runtime_static"
fi

# Several GPUs: peer access and copies both ways, a pool of GPU 0 used from
# GPU 1, CUDA IPC of GPU 0's memory opened by a process on GPU 1, and
# torchrun with NCCL (one process per GPU, gradients all-reduced). Every
# process logs to its own file (events.%p), all checked and summarized
# together.
two_gpu_rows=(peer_access shared_pool ipc_gpu1 ddp_nccl ddp_nccl_info)
gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
summary_of() { # ROW: the first lines of `gdrhook log summary` over its logs
    wanted "$1" || return 0
    "$cli" log summary "$out/$1"/events.*.jsonl | head -3 | sed "s/^/  $1: /"
}
if [ "$gpus" -lt 2 ]; then
    echo "${two_gpu_rows[*]}: skipped, $gpus GPU(s) here: these rows need two or more"
    skipped+=("${two_gpu_rows[@]}")
else
    run_case peer_access "peer x2" 1 -- "$bin/two_gpus" peer
    summary_of peer_access
    run_case shared_pool "pool 0->1" 1 -- "$bin/two_gpus" pool
    summary_of shared_pool
    run_case ipc_gpu1 "ipc 0->1" 1 -- "$bin/ipc" 1
    summary_of ipc_gpu1
    if ! python3 -c "import torch.distributed" 2>/dev/null; then
        echo "ddp_nccl ddp_nccl_info: skipped, python3 cannot import torch.distributed"
        skipped+=(ddp_nccl ddp_nccl_info)
    else
        # The hooked run goes through `gdrhook run`, as a user would start it.
        hook_through_cli=1 run_case ddp_nccl "nccl x$gpus" 0 -- \
            torchrun --standalone --nproc-per-node="$gpus" "$here/ddp_check.py"
        summary_of ddp_nccl
        # Once more with NCCL's own info lines on stderr, which differ by
        # nature between two runs (hosts, pids, ports, timings): the judge
        # masks those and nothing else (tests/gpu/table_row.py).
        hook_through_cli=1 run_case ddp_nccl_info "nccl INFO" 0 NCCL_DEBUG=INFO -- \
            torchrun --standalone --nproc-per-node="$gpus" "$here/ddp_check.py"
        summary_of ddp_nccl_info
    fi
fi

# A training loop killed with SIGKILL mid-run: what its log lacks, the
# shim's journal beside it holds; `gdrhook log check` recovers it and must
# pass (pins the process held went with it).
if wanted torch_sigkill; then
    if python3 -c "import torch" 2>/dev/null; then
        echo
        echo "== torch_sigkill: a training loop killed with SIGKILL after 20 s"
        kill_dir="$out/torch_sigkill"
        rm -rf "$kill_dir"
        mkdir -p "$kill_dir"
        env "${hook_env[@]}" GDRHOOK_EVENTS="$kill_dir/events.%p.jsonl" LD_PRELOAD="$shim" \
            python3 "$here/torch_endings.py" train >"$kill_dir/out" 2>"$kill_dir/err" &
        victim=$!
        sleep 20
        kill -KILL "$victim"
        wait "$victim" 2>/dev/null
        echo "killed after $(tail -1 "$kill_dir/out")"
        echo "frees in the log before recovery: $(cat "$kill_dir"/events.*.jsonl | grep -c '"ev":"free"')"
        "$cli" log recover "$kill_dir" || failures=$((failures + 1))
        echo "frees in the log after recovery: $(cat "$kill_dir"/events.*.jsonl | grep -c '"ev":"free"')"
        "$cli" log check "$kill_dir"/events.*.jsonl || failures=$((failures + 1))
        "$cli" log summary "$kill_dir"/events.*.jsonl | head -4
    else
        echo "torch_sigkill: skipped, python3 cannot import torch"
        skipped+=(torch_sigkill)
    fi
fi

if wanted coherence; then
    echo
    echo "== coherence: 8 threads x 500 free/alloc/lookup of 64 MiB, hooked (${hook_env[*]})"
    churn="$out/coherence"
    mkdir -p "$churn"
    rm -f "$churn"/events.*.jsonl "$churn"/free_kept.*.jsonl
    env "${hook_env[@]}" GDRHOOK_EVENTS="$churn/events.%p.jsonl" LD_PRELOAD="$shim" \
        timeout -k 10 "$limit" "$bin/coherence_churn" gdrhook 8 500 64 \
        >"$churn/hooked.out" 2>"$churn/hooked.err"
    churn_rc=$?
    cat "$churn/hooked.out"
    grep -E "backend|cache \(" "$churn/hooked.err"
    echo "the same churn with a naive cache (no hook):"
    timeout -k 10 "$limit" "$bin/coherence_churn" naive 8 500 64 | tee "$churn/naive.out"
    if [ "$churn_rc" -ne 0 ] ||
        ! grep -q " stale=0 verify_mismatches=0 used_delta_bytes=0$" "$churn/hooked.out"; then
        echo "coherence: FAIL (exit $churn_rc; want stale=0 verify_mismatches=0 used_delta_bytes=0)"
        failures=$((failures + 1))
    fi
    # A pinned buffer's memory is free when its cuMemFree returns, as
    # without the shim: the most a free left in use, plain and hooked.
    timeout -k 10 "$limit" "$bin/coherence_churn" free_kept 4 50 64 >"$churn/free_kept_plain.out"
    env "${hook_env[@]}" GDRHOOK_EVENTS="$churn/free_kept.%p.jsonl" LD_PRELOAD="$shim" \
        timeout -k 10 "$limit" "$bin/coherence_churn" free_kept 4 50 64 \
        >"$churn/free_kept_hooked.out" 2>"$churn/free_kept_hooked.err"
    kept_plain=$(grep -o 'free_kept_max=[-0-9]*' "$churn/free_kept_plain.out" | cut -d= -f2)
    kept_hooked=$(grep -o 'free_kept_max=[-0-9]*' "$churn/free_kept_hooked.out" | cut -d= -f2)
    echo "memory a free of 64 MiB left in use as it returned, at most: plain ${kept_plain:-?}," \
        "hooked ${kept_hooked:-?} bytes"
    if [ -z "$kept_plain" ] || [ -z "$kept_hooked" ] || [ "$kept_hooked" -gt "$kept_plain" ]; then
        echo "coherence: FAIL (a hooked free left more memory in use than a plain one)"
        failures=$((failures + 1))
    fi
    if [ -x "$cli" ]; then
        "$cli" log check "$churn"/events.*.jsonl "$churn"/free_kept.*.jsonl ||
            failures=$((failures + 1))
        "$cli" log summary "$churn"/events.*.jsonl | sed -n '/unpin delay/,/^$/p'
    else
        echo "coherence: no gdrhook CLI at $cli for the log check"
        failures=$((failures + 1))
    fi
fi

if [ "${GDRHOOKTEST_GPU_OVERHEAD:-1}" != 0 ]; then # a few minutes; 0 leaves it out
    echo
    echo "== overhead of the shim on cuMemAlloc+cuMemFree (1 MiB) pairs"
    # Judged on every process, not only the median (overhead_judge.py).
    if ! python3 "$here/overhead.py" "$bin" "$shim"; then
        echo "overhead: FAIL (the goal per pair is not met; see the verdict above)"
        failures=$((failures + 1))
    fi
fi

echo
[ ${#skipped[@]} -eq 0 ] || echo "skipped (see above): ${skipped[*]}"
echo "logs and outputs: $out/PROGRAM/ (notes.txt: frees by API)"
if [ $failures -eq 0 ]; then echo "GPU MATRIX: PASS"; else echo "GPU MATRIX: FAIL ($failures)"; fi
[ $failures -eq 0 ]
