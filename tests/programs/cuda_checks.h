// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one check of a CUDA call for every test program (tests/programs,
// tests/gpu, tests/ucx, tests/vm, tests/hostile): the driver's CUresult and
// the runtime's cudaError_t alike, success being 0 in both. A failed call
// is named as written, with its code, and what happens then is the
// caller's choice of macro:
//   CHECK_CU(call)                  "CALL failed: RC" on stdout, and return 1
//                                   (programs whose output a test compares
//                                   between a plain and a hooked run)
//   CHECK_CU_OR_EXIT(call, status)  "PROGRAM[PID]: CALL failed with RC" on
//                                   stderr, and exit with `status` (threads,
//                                   helpers, main's setup: no error to return)
// And the primary context of device 0 made current, and the device memory
// in use.
#pragma once

#include <cuda.h>

#include <cerrno> // program_invocation_short_name
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

[[noreturn]] inline void exit_on_failure(const char *what, int rc, int status)
{
    std::fprintf(stderr, "%s[%d]: %s failed with %d\n", program_invocation_short_name,
                 static_cast<int>(getpid()), what, rc);
    std::exit(status);
}

inline int failed(const char *what, int rc)
{
    std::printf("%s failed: %d\n", what, rc);
    return 1;
}

#define CHECK_CU_OR_EXIT(call, status)                                                             \
    do {                                                                                           \
        const int rc_ = static_cast<int>(call);                                                    \
        if (rc_ != 0)                                                                              \
            exit_on_failure(#call, rc_, status);                                                   \
    } while (0)

#define CHECK_CU(call)                                                                             \
    do {                                                                                           \
        const int rc_ = static_cast<int>(call);                                                    \
        if (rc_ != 0)                                                                              \
            return failed(#call, rc_);                                                             \
    } while (0)

// Device memory in use, the driver's count for the current context's
// device; a failed query exits with `status`. The _v2 entry point by name:
// the programs that name the driver's entry points themselves
// (__CUDA_API_VERSION_INTERNAL) get the 32-bit cuMemGetInfo otherwise.
inline long long device_bytes_in_use(int status = 1)
{
    size_t free_bytes = 0, total = 0;
    CHECK_CU_OR_EXIT(cuMemGetInfo_v2(&free_bytes, &total), status);
    return static_cast<long long>(total - free_bytes);
}

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
