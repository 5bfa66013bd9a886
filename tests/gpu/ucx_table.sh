#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# One command, on a machine with an NVIDIA GPU: UCX's own registration
# cache (tests/ucx/ucx_rcache.cpp, an ucs_rcache on UCM_EVENT_MEM_TYPE_FREE
# whose registrations hold a dma-buf, as UCX's IB memory domain holds a
# dma-buf MR) over every free path, run
#   without gdrhook, under gdrhook with GDRHOOK_UCX=off, and with =on,
# in each of UCX's CUDA hook modes (UCX_MEM_CUDA_HOOK_MODE=bistro, UCX's
# default, reloc, none), and prints one table (tests/gpu/ucx_table.py):
# stale lookups of all lookups, device memory still held after the frees,
# ns per cache hit, whether UCX kept its cache on and the CUDA hooks UCX's
# own log says it installed. Then the same without gdrhook and under
# GDRHOOK_UCX=auto with the first cache made before the first CUDA call,
# as ucp_init makes UCP's: shown, not judged.
#
# The verdict (UCX TABLE: PASS/FAIL): with GDRHOOK_UCX=off every row equals
# the row without gdrhook; with GDRHOOK_UCX=on no lookup is stale and the
# memory is back in every hook mode, none included: back to what the driver
# itself keeps after that free with nothing registered, which the run
# without gdrhook measures first (ucx_rcache --driver-kept; a destroyed
# graph's memory stays in the device's graph pool, gdrhook or not).
#
# Then, where python3 imports them and UCX_TABLE_FRAMEWORKS is not 0, the
# same for PyTorch with expandable segments and JAX with the platform
# allocator (tests/gpu/ucx_frameworks.py, the cache in a library loaded with
# ctypes), judged the same way on a verdict line of their own (UCX TABLE,
# frameworks), which the exit status leaves out; a framework run stops at
# UCX_TABLE_FW_TIMEOUT seconds (default 75), and starts only while the
# script has run for less than UCX_TABLE_BUDGET seconds (default 390), so
# that one command ends inside a 9-minute limit with the first table out.
#
# Workloads (paths): cuMemFree_v2; cuMemFreeAsync (default pool); cuMemUnmap
# + cuMemRelease (VMM); cuMemFreeAsync + cuMemPoolTrimTo (own pool);
# cudaFree of the CUDA runtime linked statically (it reaches the driver
# through cuGetProcAddress); cuCtxDestroy with the registration outstanding;
# graph memory trimmed (cuDeviceGraphMemTrim, then launched again) and a
# graph destroyed (cuGraphDestroy; a new graph gets the address).
# Each runs UCX_TABLE_ROUNDS rounds (default 10) of register, free, allocate
# at the same address, look up: 2 lookups a round.
#
# UCX: built with CUDA support and installed at .carry/ucx-src (or
# UCX_TABLE_UCX), src/ucm (with its CUDA module, lib/ucx/libucm_cuda.so.0)
# and src/ucs only. How it was built (UCX v1.22.0, on a machine with
# autotools; nvml.h, which only UCX's uct needs, stood in by an empty
# header and a stub libnvidia-ml for configure):
#   ./autogen.sh; mkdir build; cd build
#   ../contrib/configure-release --prefix=$REPO/.carry/ucx-src \
#       --with-cuda=/usr/local/cuda --without-verbs --without-rdmacm \
#       --without-knem --without-xpmem --without-java --without-go \
#       --without-gdrcopy --without-rocm --without-ze --without-fuse3 \
#       --without-mad --without-valgrind --without-bfd --disable-static \
#       --disable-doxygen-doc
#   make -C src/ucm install && make -C src/ucs install
#   strip --strip-unneeded the .so files; rm the .la files
# (configure-release keeps UCX's debug log lines: --disable-logging caps
# them at debug.) libucs finds libucm_cuda in lib/ucx beside itself, and
# UCX_MODULE_DIR says so too, wherever the folder was copied to; libucm_cuda
# needs libcudart.so.13 (CUDA's lib64 on LD_LIBRARY_PATH).
#
# UCX_TABLE_FAKE=1: over the fake driver instead (no GPU), for the script's
# own plumbing: the fake libcuda and libcudart are built here from
# tests/fake_driver at -O0 with frame pointers, so that UCX's bistro can
# decode their prologues (push %rbp; mov %rsp,%rbp; sub $N,%rsp), as it
# decodes the real driver's; the runtime is the fake's shared one.
#
# Exits 0 on PASS, 1 on FAIL or a broken setup, 77 (a skip) when no GPU is
# usable.
#   tests/gpu/ucx_table.sh BUILD_DIR [OUT_DIR]
set -uo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-/tmp/gdrhook-ucx-table}")
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
shim="$build/hook/libgdrhook.so"
ucx=$(realpath -m "${UCX_TABLE_UCX:-$root/.carry/ucx-src}")
cuda=${CUDA_HOME:-/usr/local/cuda}
rounds=${UCX_TABLE_ROUNDS:-10}
lookups=${UCX_TABLE_LOOKUPS:-200000} # timed cache hits per workload
limit=${UCX_TABLE_TIMEOUT:-90}        # seconds, per run
fake=${UCX_TABLE_FAKE:-0}
frameworks=${UCX_TABLE_FRAMEWORKS:-1}
budget=${UCX_TABLE_BUDGET:-390}       # seconds, before a framework run starts
fw_limit=${UCX_TABLE_FW_TIMEOUT:-75}  # seconds, per framework run
fw_rounds=${UCX_TABLE_FW_ROUNDS:-5}

# shellcheck source=tests/gpu/opening_checks.sh
. "$here/opening_checks.sh"
if [ "$fake" != 1 ]; then
    skip_without_gpu
fi
[ -f "$shim" ] || { echo "no shim at $shim: build first"; exit 1; }
need_files "no {}: UCX with CUDA support is not at $ucx (see the comment above)" \
    "$ucx/include/ucs/memory/rcache.h" "$ucx/lib/libucs.so" "$ucx/lib/libucm.so" \
    "$ucx/lib/ucx/libucm_cuda.so.0"
mkdir -p "$out/bin" "$out/cells"
rm -f "$out"/cells/*

# The program, against the carried UCX and the toolkit's headers; libcuda
# from the stubs (the real one at run time), never the shim.
driver_dir=""
if [ "$fake" = 1 ]; then
    driver_dir="$out/fake"
    mkdir -p "$driver_dir"
    # Every fake_*.cpp but the runtime's, as tests/fake_driver/meson.build lists them.
    fake_sources=()
    for f in "$root"/tests/fake_driver/fake_*.cpp; do
        [ "${f##*/}" = fake_cudart.cpp ] || fake_sources+=("$f")
    done
    if ! g++ -O0 -fno-omit-frame-pointer -shared -fPIC -I"$cuda/include" \
        -I"$root/tests/kmods/provider" "${fake_sources[@]}" -Wl,-Bsymbolic \
        -Wl,-soname,libcuda.so.1 -lpthread -o "$driver_dir/libcuda.so.1" ||
        ! g++ -O0 -fno-omit-frame-pointer -shared -fPIC -I"$cuda/include" \
            "$root/tests/fake_driver/fake_cudart.cpp" -Wl,-Bsymbolic -Wl,-soname,libcudart.so.13 \
            -ldl -o "$driver_dir/libcudart.so.13"; then
        echo "building the fake driver failed"
        exit 1
    fi
    driver_link=(-L"$driver_dir" -l:libcuda.so.1)
    cuda_link=("${driver_link[@]}" -l:libcudart.so.13)
else
    driver_link=(-L"$cuda/lib64/stubs" -lcuda)
    cuda_link=("${driver_link[@]}" "$cuda/lib64/libcudart_static.a" -ldl -lrt -lpthread)
fi
g++ -std=c++17 -O2 -DUCX_RCACHE_CUDART -I"$cuda/include" -I"$ucx/include" \
    "$root/tests/ucx/ucx_rcache.cpp" -L"$ucx/lib" -lucs -lucm "${cuda_link[@]}" \
    -o "$out/bin/ucx_rcache" || { echo "building tests/ucx/ucx_rcache.cpp failed"; exit 1; }
# The frameworks' cache, for ctypes: libcuda by name (the process's own).
g++ -std=c++17 -O2 -shared -fPIC -I"$root" -I"$cuda/include" -I"$ucx/include" \
    "$root/tests/gpu/ucx_rcache_py.cpp" -L"$ucx/lib" -lucs -lucm "${driver_link[@]}" \
    -o "$out/bin/libucx_rcache_py.so" || { echo "building tests/gpu/ucx_rcache_py.cpp failed"; exit 1; }

library_path="$ucx/lib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -z "$driver_dir" ] || library_path="$driver_dir:$library_path"
# UCX's own log (stdout, as the program's lines): the memory hooks' lines
# at debug (each hook, each failure, "set external events"), libucs's at
# debug (the cache's own diag when it cannot install its event handler).
ucx_env=(
    LD_LIBRARY_PATH="$library_path"
    UCX_MODULE_DIR="$ucx/lib/ucx"
    UCX_MEM_LOG_LEVEL=debug
    UCX_LOG_LEVEL=debug
)
args=(--rounds "$rounds" --dmabuf --lookup-iters "$lookups" --driver-kept)

# run_cell NAME SETUP MODE [VAR=VALUE...] -- COMMAND...: SETUP none (no
# gdrhook), off, on, auto (GDRHOOK_UCX); MODE UCX's CUDA hook mode.
run_cell() {
    local name=$1 setup=$2 mode=$3
    shift 3
    local envs=() hook=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    if [ "$setup" != none ]; then
        hook=(LD_PRELOAD="$shim" GDRHOOK_UCX="$setup" GDRHOOK_LOG_LEVEL=info)
    fi
    local t0=$SECONDS
    env "${ucx_env[@]}" UCX_MEM_CUDA_HOOK_MODE="$mode" "${envs[@]}" "${hook[@]}" \
        timeout -k 10 "$limit" "$@" >"$out/cells/$name.out" 2>&1
    echo $? >"$out/cells/$name.rc"
    echo "$name: exit $(cat "$out/cells/$name.rc"), $((SECONDS - t0)) s"
}

echo "UCX at $ucx; shim $shim; $rounds rounds a workload; $lookups timed hits"
for mode in bistro reloc none; do
    for setup in none off on; do
        run_cell "$setup-$mode" "$setup" "$mode" -- "$out/bin/ucx_rcache" "${args[@]}"
    done
done
for mode in bistro reloc none; do
    for setup in none auto; do
        run_cell "$setup-$mode-early" "$setup" "$mode" -- "$out/bin/ucx_rcache" "${args[@]}" \
            --early-rcache
    done
done
echo
python3 "$here/ucx_table.py" "$out"
verdict=$?
echo "outputs: $out/cells/SETUP-MODE.out"

if [ "$frameworks" != 0 ]; then
    echo
    fw_args=("$out/bin/libucx_rcache_py.so")
    if [ "$fake" = 1 ]; then
        workloads=(driver)
    else
        workloads=(torch_expandable jax)
    fi
    for workload in "${workloads[@]}"; do
        case $workload in
            torch_expandable) module=torch fw_env=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
            jax) module=jax fw_env=(XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false) ;;
            *) module=ctypes fw_env=() ;;
        esac
        if ! python3 -c "import $module" 2>/dev/null; then
            echo "$workload: skipped, python3 cannot import $module"
            continue
        fi
        for mode in bistro reloc none; do
            for setup in none off on; do
                if [ $SECONDS -ge "$budget" ]; then
                    echo "fw-$workload-$setup-$mode: not run, ${SECONDS} s spent (UCX_TABLE_BUDGET=$budget)"
                    continue
                fi
                limit=$fw_limit run_cell "fw-$workload-$setup-$mode" "$setup" "$mode" \
                    "${fw_env[@]}" PYTHONUNBUFFERED=1 -- python3 "$here/ucx_frameworks.py" \
                    "${fw_args[@]}" "$workload" "$fw_rounds" "$lookups"
            done
        done
    done
    if ls "$out"/cells/fw-*.out >/dev/null 2>&1; then
        echo
        python3 "$here/ucx_table.py" "$out" frameworks
        echo "outputs: $out/cells/fw-WORKLOAD-SETUP-MODE.out"
    fi
fi
echo "script: $SECONDS s"
exit $verdict
