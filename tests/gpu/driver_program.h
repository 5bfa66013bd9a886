// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the driver-API programs of tests/gpu share (each is built on its
// own by tests/gpu/build_programs.sh).
#pragma once

#include "gpu_program.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

/// Initializes the driver and makes device 0's primary context current;
/// returns the device (for cuDevicePrimaryCtxRelease).
inline CUdevice use_primary_context()
{
    CHECK(cuInit(0));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    return device;
}

/// Brackets the counted part (see tests/gpu/marker.py): an allocation of a
/// size nobody else uses, freed at once.
inline void mark()
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, 3 * 1024 * 1024 + 7 * 4096));
    CHECK(cuMemFree(p));
}
