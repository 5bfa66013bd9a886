// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the driver-API test programs share: a failed call printed on stdout
// (compared between the plain and the hooked run) and the primary context
// of device 0 made current.
#pragma once

#include <cuda.h>

#include <cstdio>

inline int failed(const char *what, CUresult rc)
{
    std::printf("%s failed: %d\n", what, int(rc));
    return 1;
}

#define CHECK_CU(call)                                                                       \
    do {                                                                                     \
        CUresult rc_ = (call);                                                               \
        if (rc_ != CUDA_SUCCESS)                                                             \
            return failed(#call, rc_);                                                       \
    } while (0)

// Null when the driver cannot give one.
inline CUcontext current_primary_context()
{
    CUdevice dev;
    CUcontext ctx = nullptr;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return nullptr;
    return ctx;
}
