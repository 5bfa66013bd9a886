#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# One command, on a machine with an NVIDIA GPU: Open MPI, built from its
# own source with CUDA and run unmodified, plain and under gdrhook. Two
# ranks on one node (pml ob1, btl self,smcuda: the CUDA-aware shared-memory
# path) run tests/gpu/mpi_pingpong, which checks its data:
#   cuda_to_cuda  both ranks' buffers on the GPU (large messages go by
#                 CUDA IPC, small ones are copied through shared memory)
#   host_to_cuda  rank 0's buffers on the GPU, rank 1's in host memory
# Open MPI 4.1 asks the driver, for the buffer of every send and receive,
# cuPointerGetAttributes(MEMORY_TYPE, CONTEXT, IS_MANAGED)
# (mca_common_cuda_is_gpu_buffer), which gdrhook answers for the buffers it
# saw allocated. Its buffer-ID tag check (mca_common_cuda_previously_freed_
# memory) is not on this path: only the grdma registration cache of its
# openib BTL, that is a NIC, uses it.
#
# Modes, each a fresh mpirun: plain, hooked, count (hooked with
# GDRHOOK_POINTER_QUERIES=off, so the `queries` lines' forwarded count is
# the number of driver queries plain) and verify (GDRHOOK_VERIFY=1); plain
# and hooked alternate OPENMPI_ROUNDS times (default 5), the order swapped
# every round. tests/gpu/openmpi_table.py prints the table and the
# verdict (OPENMPI: PASS/FAIL), judged as libfabric.sh's: every run exits
# 0 with its data checked, verify finds 0 differences, hooked sends the
# driver fewer queries than plain. The latencies are shown, not judged.
#
# Open MPI: installed at OPENMPI_PREFIX (default .carry/ompi/ompi), with
# bin/mpi_pingpong built by its mpicxx; the folder's VERSION file says
# which. How it was built (Open MPI 4.1.4, `apt-get source openmpi` on
# Debian bookworm, the upstream tarball unpatched; on a machine without a
# GPU: Open MPI loads libcuda with dlopen, the headers are enough):
#   configure --prefix=P --with-cuda=/usr/local/cuda --disable-mpi-fortran
#       --disable-oshmem --disable-mpi-cxx --disable-io-romio --without-ucx
#       --without-verbs --without-ofi --disable-static
#       --enable-mca-no-build=(NIC, batch-system and I/O components)
#   make -j2 install; strip --strip-unneeded the binaries and libraries
#   P/bin/mpicxx -O2 -I/usr/local/cuda/include tests/gpu/mpi_pingpong.cpp
#       -L/usr/local/cuda/lib64/stubs -lcuda -o P/bin/mpi_pingpong
#
# Exits 0 on PASS, 1 on FAIL or a broken setup, 77 (a skip) when no GPU is
# usable.
#   tests/gpu/openmpi.sh BUILD_DIR [OUT_DIR]
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-openmpi}")
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
shim="$build/hook/libgdrhook.so"
ompi=$(realpath -m "${OPENMPI_PREFIX:-$root/.carry/ompi/ompi}")
rounds=${OPENMPI_ROUNDS:-5}
iters=${OPENMPI_ITERS:-5000}
sizes=${OPENMPI_SIZES:-1 64 1024 8192 65536 1048576}
limit=${OPENMPI_TIMEOUT:-120} # seconds, per mpirun

# shellcheck source=tests/gpu/opening_checks.sh
. "$here/opening_checks.sh"
skip_without_gpu
need_files "missing: {}" "$shim" "$ompi/bin/mpirun" "$ompi/bin/mpi_pingpong"
mkdir -p "$out"
# The install may have moved since it was built: OPAL_PREFIX says where.
export OPAL_PREFIX="$ompi"
export LD_LIBRARY_PATH="$ompi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$ompi/bin:$PATH"

{
    echo "open mpi $(cat "$ompi/VERSION" 2>/dev/null || echo unknown)"
    "$ompi/bin/ompi_info" --parsable --all 2>/dev/null |
        grep -E 'opal_built_with_cuda_support:value|^mca:btl:[a-z0-9]+:version:"component' |
        tr '\n' ' '
    echo
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu /'
} | tee "$out/setup.txt"

# One mpirun of a setup in one mode: rank 0's stdout in
# OUT/SETUP/MODE.ROUND.out, both ranks' gdrhook logs beside it.
run_pair() {
    local setup=$1 mode=$2 round=$3
    local dir="$out/$setup" name="$mode.$round"
    local -a env=()
    mkdir -p "$dir"
    case "$mode" in
    plain) ;;
    hooked) env=(-x LD_PRELOAD="$shim") ;;
    count) env=(-x LD_PRELOAD="$shim" -x GDRHOOK_POINTER_QUERIES=off) ;;
    verify) env=(-x LD_PRELOAD="$shim" -x GDRHOOK_VERIFY=1) ;;
    esac
    [ "$mode" = plain ] || env+=(-x GDRHOOK_EVENTS="$dir/$name.events.%p.jsonl")
    local memory=cuda
    [ "$setup" = host_to_cuda ] && memory=host
    # shellcheck disable=SC2086 # the sizes are one argument each
    timeout "$limit" mpirun --allow-run-as-root -np 2 --bind-to none \
        --mca pml ob1 --mca btl self,smcuda "${env[@]}" \
        "$ompi/bin/mpi_pingpong" "$memory" "$iters" $sizes >"$dir/$name.out" 2>&1
    echo "$setup $mode $round mpirun=$?" | tee -a "$out/runs.txt"
}

: >"$out/runs.txt"
# shellcheck source=tests/gpu/ab_rounds.sh
. "$here/ab_rounds.sh"
ab_rounds "$rounds" cuda_to_cuda host_to_cuda
python3 "$here/openmpi_table.py" "$out" | tee "$out/table.txt"
exit "${PIPESTATUS[0]}"
