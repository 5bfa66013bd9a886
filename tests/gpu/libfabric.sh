#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# One command, on a machine with an NVIDIA GPU: libfabric, built from its
# own source with CUDA and run unmodified, plain and under gdrhook. Its own
# ping-pong test (fabtests' fi_rdm_pingpong, data checked with -v) runs
# over the shm provider, the one that moves device memory with no NIC:
#   cuda_to_cuda  both processes' buffers on the GPU (shm sends each
#                 message by CUDA IPC; the receiver finds the sender's
#                 buffer in its IPC cache and copies it with cudaMemcpy)
#   host_to_cuda  the server's buffers on the GPU, the client's in host
#                 memory (copies between the shared region and the device)
# In each, every cudaMemcpy libfabric makes is followed by
# cuPointerGetAttribute(CONTEXT) of its destination and source
# (ofi_cudaMemcpy), which gdrhook answers for the buffers it saw allocated.
# libfabric's buffer-ID tag check (cuda_mm_valid) is not on this path: only
# the MR caches of the NIC providers (verbs, EFA, CXI, OPX, LPP) use the
# CUDA monitor; shm's IPC cache compares IPC handles instead.
#
# Modes, each a fresh pair of processes:
#   plain    no gdrhook
#   hooked   LD_PRELOAD=libgdrhook.so, its defaults
#   count    hooked with GDRHOOK_POINTER_QUERIES=off: every query goes to
#            the driver, so the `queries` lines' forwarded count is the
#            number of driver queries the program makes plain
#   verify   hooked with GDRHOOK_VERIFY=1: every answer from the table is
#            checked against the driver's; a difference is an error event
# plain and hooked alternate LIBFABRIC_ROUNDS times (default 5), the order
# swapped every round. tests/gpu/libfabric_table.py prints the table: the
# ping-pong latency per size (median over rounds, hooked / plain), driver
# queries plain against hooked, verify's differences.
#
# The verdict (LIBFABRIC: PASS/FAIL): every run passes its data check and
# exits 0, verify finds 0 differences, and hooked makes fewer driver
# queries than plain, or none where plain makes none (device to device,
# shm's IPC copies ask nothing); at least one setup must ask. The
# latencies are shown, not judged.
#
# libfabric and fabtests: installed at .carry/fabric/lf (or
# LIBFABRIC_PREFIX); the folder's COMMIT file names the commit. How they
# were built (on a machine without a GPU; nvml.h, absent there, stood in by
# a header declaring nvmlReturn_t, NVML_SUCCESS, nvmlInit_v2,
# nvmlDeviceGetCount_v2 and nvmlShutdown, which libfabric loads by dlopen):
#   ./autogen.sh
#   ./configure --prefix=$REPO/.carry/fabric/lf --enable-only --enable-shm \
#       --enable-tcp --enable-rxm --with-cuda=/usr/local/cuda \
#       --enable-cuda-dlopen --disable-static
#   make CPPFLAGS="-I/usr/local/cuda/include -I$STUB" install
#   cd fabtests; ./autogen.sh
#   ./configure --prefix=$REPO/.carry/fabric/lf \
#       --with-libfabric=$REPO/.carry/fabric/lf --with-cuda=/usr/local/cuda
#   make install; strip --strip-unneeded the binaries and libraries
#
# LIBFABRIC_MEMORY=host: every buffer in host memory, for the script's own
# plumbing on a machine without a GPU (nothing asks the driver then).
#
# Exits 0 on PASS, 1 on FAIL or a broken setup, 77 (a skip) when no GPU is
# usable.
#   tests/gpu/libfabric.sh BUILD_DIR [OUT_DIR]
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-libfabric}")
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
shim="$build/hook/libgdrhook.so"
lf=$(realpath -m "${LIBFABRIC_PREFIX:-$root/.carry/fabric/lf}")
rounds=${LIBFABRIC_ROUNDS:-5}
iters=${LIBFABRIC_ITERS:-5000}
warmup=${LIBFABRIC_WARMUP:-500} # unmeasured round trips before each size
sizes=${LIBFABRIC_SIZES:-l:1,64,1024,8192,65536}
memory=${LIBFABRIC_MEMORY:-cuda}
limit=${LIBFABRIC_TIMEOUT:-60} # seconds, per process
port=${LIBFABRIC_PORT:-47592}

# shellcheck source=tests/gpu/opening_checks.sh
. "$here/opening_checks.sh"
if [ "$memory" = cuda ]; then
    skip_without_gpu
fi
need_files "missing: {}" "$shim" "$lf/bin/fi_rdm_pingpong" "$lf/bin/fi_info"
mkdir -p "$out"
export LD_LIBRARY_PATH="$lf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FI_PROVIDER=shm

{
    echo "libfabric $("$lf/bin/fi_info" --version | tr '\n' ' ')"
    echo "commit $(cat "$lf/COMMIT" 2>/dev/null || echo unknown)"
    echo "providers $("$lf/bin/fi_info" -l 2>/dev/null | tr -d ':' | tr '\n' ' ')"
    echo "rdma devices: $(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu /'
} | tee "$out/setup.txt"

# Whether a TCP socket listens on port $1 (state 0A in /proc/net/tcp).
listening() {
    grep -qi "^ *[0-9]*: [0-9A-F]*:$(printf %04X "$1") [0-9A-F:]* 0A " /proc/net/tcp
}

# One server and one client of a setup in one mode; their stdout in
# OUT/SETUP/MODE.ROUND.{server,client}, gdrhook's logs beside them.
run_pair() {
    local setup=$1 mode=$2 round=$3
    local dir="$out/$setup" name="$mode.$round"
    local -a env=() server_mem=() client_mem=()
    mkdir -p "$dir"
    case "$mode" in
    plain) ;;
    hooked) env=(LD_PRELOAD="$shim") ;;
    count) env=(LD_PRELOAD="$shim" GDRHOOK_POINTER_QUERIES=off) ;;
    verify) env=(LD_PRELOAD="$shim" GDRHOOK_VERIFY=1) ;;
    esac
    [ "$mode" = plain ] || env+=(GDRHOOK_EVENTS="$dir/$name.events.%p.jsonl")
    if [ "$memory" = cuda ]; then
        server_mem=(-D cuda -i 0)
        [ "$setup" = cuda_to_cuda ] && client_mem=(-D cuda -i 0)
    fi
    port=$((port + 1))
    local args=(-p shm -E="$port" -S "$sizes" -I "$iters" -w "$warmup" -v)
    env "${env[@]}" timeout "$limit" "$lf/bin/fi_rdm_pingpong" "${args[@]}" "${server_mem[@]}" \
        >"$dir/$name.server" 2>&1 &
    local server=$!
    for _ in $(seq 100); do # until the server listens for the address exchange
        listening "$port" && break
        sleep 0.05
    done
    env "${env[@]}" timeout "$limit" "$lf/bin/fi_rdm_pingpong" "${args[@]}" "${client_mem[@]}" \
        127.0.0.1 >"$dir/$name.client" 2>&1
    local client_rc=$?
    wait "$server"
    local server_rc=$?
    echo "$setup $mode $round server=$server_rc client=$client_rc" | tee -a "$out/runs.txt"
}

: >"$out/runs.txt"
# shellcheck source=tests/gpu/ab_rounds.sh
. "$here/ab_rounds.sh"
ab_rounds "$rounds" cuda_to_cuda host_to_cuda
python3 "$here/libfabric_table.py" "$out" | tee "$out/table.txt"
exit "${PIPESTATUS[0]}"
