// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the runtime-API programs of tests/gpu share (each is built on its
// own by tests/gpu/build_programs.sh).
#pragma once

#include "gpu_program.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

/// Device memory in use on the current device.
inline long long used_bytes()
{
    size_t free_bytes = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total));
    return static_cast<long long>(total - free_bytes);
}

/// Brackets the counted part (see tests/gpu/marker.py): an allocation of a
/// size nobody else uses, freed at once. The runtime's own frees at
/// start-up and exit fall outside.
inline void mark()
{
    void *p = nullptr;
    CHECK(cudaMalloc(&p, 3 * 1024 * 1024 + 7 * 4096));
    CHECK(cudaFree(p));
}
