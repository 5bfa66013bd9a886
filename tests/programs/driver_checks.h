// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the driver-API test programs share: a failed call printed on stdout
// (compared between the plain and the hooked run) or said on stderr before
// the program exits, and the primary context of device 0 made current.
#pragma once

#include <cuda.h>

#include <cerrno> // program_invocation_short_name
#include <cstdio>
#include <cstdlib>

// For code with no error to return (threads, helpers, main's setup): a
// failed call is said on stderr, named by the program, and the process
// exits with `status`.
[[noreturn]] inline void exit_on_failure(const char *what, CUresult rc, int status)
{
    std::fprintf(stderr, "%s: %s failed with %d\n", program_invocation_short_name, what, int(rc));
    std::exit(status);
}

#define CHECK_CU_OR_EXIT(call, status)                                                             \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS)                                                                   \
            exit_on_failure(#call, rc_, status);                                                   \
    } while (0)

inline int failed(const char *what, CUresult rc)
{
    std::printf("%s failed: %d\n", what, int(rc));
    return 1;
}

#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS)                                                                   \
            return failed(#call, rc_);                                                             \
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
