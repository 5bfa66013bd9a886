#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# Builds the GPU test programs with the machine's CUDA toolkit.
#   tests/gpu/build_programs.sh OUT_BIN_DIR
set -euo pipefail
here=$(dirname "$(realpath "$0")")
bin=$1
mkdir -p "$bin"
cuda=${CUDA_HOME:-/usr/local/cuda}
stubs="$cuda/lib64/stubs"
PATH=$PATH:$cuda/bin # the toolkit's nvcc when PATH has none (meson test, a bare shell)
root=$(realpath "$here/../..")
g++ -O2 -I"$cuda/include" "$here/driver_api.cpp" -L"$stubs" -lcuda -o "$bin/driver_api"
g++ -O2 -I"$cuda/include" "$here/alloc_free_overhead.cpp" -L"$stubs" -lcuda -o "$bin/alloc_free_overhead"
g++ -O2 -I"$cuda/include" "$here/alloc_free_ab.cpp" -L"$stubs" -lcuda -o "$bin/alloc_free_ab"
g++ -O2 -shared -fPIC -I"$cuda/include" "$here/forwarding_shim.cpp" -ldl -o "$bin/forwarding_shim.so"
nvcc -O2 -arch=sm_90 "$here/runtime_api.cu" -o "$bin/runtime_static"
nvcc -O2 -arch=sm_90 -cudart shared "$here/runtime_api.cu" -o "$bin/runtime_shared"
nvcc -O2 -arch=sm_90 "$here/ipc.cu" -o "$bin/ipc"
nvcc -O2 -arch=sm_90 "$here/capture_graph.cu" -L"$stubs" -lcuda -o "$bin/capture_graph"
# capture.cpp's per-thread-stream case goes through the runtime (shared,
# as the shim's runtime wrappers need it).
g++ -O2 -I"$cuda/include" -I"$root" "$root/tests/programs/capture.cpp" -L"$stubs" -lcuda \
    -L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64" -lpthread -ldl -o "$bin/capture"
g++ -O2 -I"$cuda/include" "$here/two_gpus.cpp" -L"$stubs" -lcuda -o "$bin/two_gpus"
g++ -O2 -I"$cuda/include" -I"$root" "$root/tests/programs/graph_memory.cpp" -L"$stubs" -lcuda \
    -lpthread -ldl -o "$bin/graph_memory"
g++ -O2 -I"$cuda/include" "$root/tests/programs/pinned_host.cpp" -L"$stubs" -lcuda \
    -o "$bin/pinned_host"
g++ -O2 -I"$cuda/include" "$root/tests/programs/refused_frees.cpp" -L"$stubs" -lcuda \
    -o "$bin/refused_frees"
g++ -O2 -I"$cuda/include" "$root/tests/programs/over_release.cpp" -L"$stubs" -lcuda \
    -o "$bin/over_release"
g++ -O2 -I"$cuda/include" "$here/ctx_destroy.cpp" -L"$stubs" -lcuda -o "$bin/ctx_destroy"
g++ -O2 -I"$cuda/include" "$here/tag_check.cpp" -L"$stubs" -lcuda -o "$bin/tag_check"
g++ -O2 -I"$root" -I"$cuda/include" "$root/tests/programs/coherence_churn.cpp" \
    -L"$stubs" -lcuda -lpthread -ldl -o "$bin/coherence_churn"
# The fake driver, for measuring the shim's own cost without the driver's.
mkdir -p "$bin/fake"
# Every fake_*.cpp but the runtime's, as tests/fake_driver/meson.build lists them.
g++ -O2 -shared -fPIC -I"$cuda/include" -I"$here/../kmods/provider" \
    $(ls "$here"/../fake_driver/fake_*.cpp | grep -v fake_cudart) \
    -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -lpthread -o "$bin/fake/libcuda.so.1"
