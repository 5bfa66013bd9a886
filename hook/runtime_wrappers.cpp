// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The runtime's deallocation entry points, for programs that use libcudart
// as a shared library. The runtime frees through driver functions it
// resolved with our cuGetProcAddress, so the driver-level wrappers normally
// record the event; these wrappers record one themselves only when no
// driver-level event happened on this thread during the call (a runtime
// that reached the driver some way we do not see).
#include "hook/wrapper.h"

using namespace gdrhook;

namespace {

template <typename Call>
cudaError_t runtime_free(const char *api, MemoryKind kind, const void *ptr, Call &&real_call)
{
    uint64_t before = events_recorded_by_this_thread();
    cudaError_t rc = real_call();
    if (rc == cudaSuccess && ptr && events_recorded_by_this_thread() == before && hook_enabled()) {
        FreeTicket ticket =
            begin_free(api, current_via(), kind, reinterpret_cast<uint64_t>(ptr), 0);
        end_free(ticket, rc);
    }
    return rc;
}

} // namespace

GDRHOOK_HOT_WRAPPER(cudaError_t, cudaFree, (void *devPtr))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaFree, cudaErrorInitializationError);
    return runtime_free("cudaFree", MemoryKind::device, devPtr, [&] { return real(devPtr); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaFreeAsync, (void *devPtr, cudaStream_t stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaFreeAsync, cudaErrorInitializationError);
    return runtime_free("cudaFreeAsync", MemoryKind::pool, devPtr,
                        [&] { return real(devPtr, stream); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaFreeAsync_ptsz, (void *devPtr, cudaStream_t stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaFreeAsync_ptsz, cudaErrorInitializationError);
    return runtime_free("cudaFreeAsync_ptsz", MemoryKind::pool, devPtr,
                        [&] { return real(devPtr, stream); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaFreeHost, (void *ptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cudaFreeHost, cudaErrorInitializationError);
    return runtime_free("cudaFreeHost", MemoryKind::host, ptr, [&] { return real(ptr); });
}

GDRHOOK_WRAPPER(cudaError_t, cudaDeviceReset, ())
{
    // The primary-context teardown it performs is seen at the driver level.
    GDRHOOK_REAL_OR_RETURN(real, cudaDeviceReset, cudaErrorInitializationError);
    return real();
}
