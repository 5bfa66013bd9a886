// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The driver API's allocation and deallocation entry points. Each wrapper
// calls the real function exactly once and returns its result unchanged;
// what the call means is decided in cache/record/recorder.cpp.
#include "hook/graph_wrappers.h"
#include "hook/wrapper.h"

#include "cache/core/host_aliases.h"

using namespace gdrhook;

namespace {

uint64_t as_u64(CUdeviceptr p)
{
    return static_cast<uint64_t>(p);
}
uint64_t as_u64(const void *p)
{
    return reinterpret_cast<uint64_t>(p);
}
template <typename Handle> uint64_t handle_u64(Handle h)
{
    return reinterpret_cast<uint64_t>(h);
}

// free-like: stamp and invalidate, run the real free, log its result.
template <typename Call>
CUresult hooked_free(const char *api, MemoryKind kind, uint64_t addr, uint64_t size_hint,
                     Call &&real_call)
{
    FreeTicket ticket =
        hook_enabled() ? begin_free(api, current_via(), kind, addr, size_hint) : FreeTicket{};
    CUresult rc = real_call();
    end_free(ticket, rc);
    return rc;
}

// A pool's trim or destroy: a free of the pool's handle, and before the
// pool gives its memory back, what frees left pinned is unpinned.
template <typename Call>
CUresult hooked_pool_release(const char *api, CUmemoryPool pool, Call &&real_call)
{
    return hooked_free(api, MemoryKind::none, handle_u64(pool), 0, [&] {
        if (hook_enabled())
            before_pool_release();
        return real_call();
    });
}

template <typename Call>
CUresult hooked_teardown(const char *api, uint64_t context, int dev, Call &&real_call)
{
    TeardownTicket ticket = hook_enabled()
                                ? begin_context_teardown(api, current_via(), context, dev)
                                : TeardownTicket{};
    CUresult rc = real_call();
    end_context_teardown(ticket, rc);
    return rc;
}

template <typename Out> uint64_t made(CUresult rc, const Out *out)
{
    return rc == CUDA_SUCCESS && out ? as_u64(*out) : 0;
}

uint64_t made(CUresult rc, const CUmemGenericAllocationHandle *out)
{
    return rc == CUDA_SUCCESS && out ? static_cast<uint64_t>(*out) : 0;
}

// cuMemAlloc and cuMemAllocHost, before and since CUDA 3.2 (the pointer
// and size types differ).
template <typename Real, typename Out, typename Size>
CUresult alloc_sized(const char *api, MemoryKind kind, Real real, Out *out, Size size)
{
    CUresult rc = real(out, size);
    // An allocation can be the first call the shim sees (cuInit and
    // cuCtxCreate are not interposed): it starts the runtime, as a free does.
    if (hook_enabled())
        record_alloc(api, current_via(), kind, made(rc, out), size, rc);
    return rc;
}

template <typename Real, typename Pointer, typename Count>
CUresult alloc_pitch(const char *api, Real real, Pointer *dptr, Count *pitch, Count width,
                     Count height, unsigned int element_size)
{
    CUresult rc = real(dptr, pitch, width, height, element_size);
    uint64_t size = rc == CUDA_SUCCESS && pitch ? uint64_t(*pitch) * height : 0;
    if (hook_enabled())
        record_alloc(api, current_via(), MemoryKind::pitch, made(rc, dptr), size, rc);
    return rc;
}

} // namespace

// ---- deallocation --------------------------------------------------------

GDRHOOK_WRAPPER(CUresult, cuMemFree, (CUdeviceptr_v1 dptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemFree, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuMemFree", MemoryKind::device, as_u64(dptr), 0,
                       [&] { return real(dptr); });
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemFree_v2, (CUdeviceptr dptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemFree_v2, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuMemFree_v2", MemoryKind::device, as_u64(dptr), 0,
                       [&] { return real(dptr); });
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemFreeAsync, (CUdeviceptr dptr, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemFreeAsync, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = hooked_free("cuMemFreeAsync", MemoryKind::pool, as_u64(dptr), 0,
                              [&] { return real(dptr, stream); });
    note_stream_free(stream, false, rc, dptr);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemFreeAsync_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = hooked_free("cuMemFreeAsync_ptsz", MemoryKind::pool, as_u64(dptr), 0,
                              [&] { return real(dptr, stream); });
    note_stream_free(stream, true, rc, dptr);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemFreeHost, (void *p))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemFreeHost, CUDA_ERROR_NOT_INITIALIZED);
    forget_device_aliases(as_u64(p));
    return hooked_free("cuMemFreeHost", MemoryKind::host, as_u64(p), 0, [&] { return real(p); });
}

GDRHOOK_WRAPPER(CUresult, cuMemHostUnregister, (void *p))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostUnregister, CUDA_ERROR_NOT_INITIALIZED);
    forget_device_aliases(as_u64(p));
    return hooked_free("cuMemHostUnregister", MemoryKind::host_registered, as_u64(p), 0,
                       [&] { return real(p); });
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemUnmap, (CUdeviceptr ptr, size_t size))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemUnmap, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuMemUnmap", MemoryKind::vmm_mapping, as_u64(ptr), size,
                       [&] { return real(ptr, size); });
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemRelease, (CUmemGenericAllocationHandle handle))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemRelease, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuMemRelease", MemoryKind::vmm_physical, handle, 0,
                       [&] { return real(handle); });
}

GDRHOOK_WRAPPER(CUresult, cuMemAddressFree, (CUdeviceptr ptr, size_t size))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAddressFree, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuMemAddressFree", MemoryKind::none, as_u64(ptr), size,
                       [&] { return real(ptr, size); });
}

GDRHOOK_WRAPPER(CUresult, cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemPoolTrimTo, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_pool_release("cuMemPoolTrimTo", pool, [&] { return real(pool, minBytesToKeep); });
}

GDRHOOK_WRAPPER(CUresult, cuMemPoolDestroy, (CUmemoryPool pool))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemPoolDestroy, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_pool_release("cuMemPoolDestroy", pool, [&] { return real(pool); });
}

GDRHOOK_WRAPPER(CUresult, cuIpcCloseMemHandle, (CUdeviceptr dptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cuIpcCloseMemHandle, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_free("cuIpcCloseMemHandle", MemoryKind::ipc, as_u64(dptr), 0,
                       [&] { return real(dptr); });
}

// ---- contexts ------------------------------------------------------------

GDRHOOK_WRAPPER(CUresult, cuCtxDestroy, (CUcontext ctx))
{
    GDRHOOK_REAL_OR_RETURN(real, cuCtxDestroy, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_teardown("cuCtxDestroy", handle_u64(ctx), -1, [&] { return real(ctx); });
}

GDRHOOK_WRAPPER(CUresult, cuCtxDestroy_v2, (CUcontext ctx))
{
    GDRHOOK_REAL_OR_RETURN(real, cuCtxDestroy_v2, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_teardown("cuCtxDestroy_v2", handle_u64(ctx), -1, [&] { return real(ctx); });
}

GDRHOOK_WRAPPER(CUresult, cuDevicePrimaryCtxReset, (CUdevice dev))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDevicePrimaryCtxReset, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_teardown("cuDevicePrimaryCtxReset", primary_context_of(dev), dev,
                           [&] { return real(dev); });
}

GDRHOOK_WRAPPER(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice dev))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDevicePrimaryCtxReset_v2, CUDA_ERROR_NOT_INITIALIZED);
    return hooked_teardown("cuDevicePrimaryCtxReset_v2", primary_context_of(dev), dev,
                           [&] { return real(dev); });
}

namespace {

// The driver destroys a primary context only on the release of its last
// reference; other releases are not deallocations.
template <typename Real> CUresult primary_release(const char *api, CUdevice dev, Real real)
{
    const PrimaryRelease release =
        hook_enabled() ? begin_primary_context_release(dev) : PrimaryRelease{};
    CUresult rc = release.destroys
                      ? hooked_teardown(api, release.destroys, dev, [&] { return real(dev); })
                      : real(dev);
    end_primary_context_release(dev, release, rc);
    return rc;
}

} // namespace

GDRHOOK_WRAPPER(CUresult, cuDevicePrimaryCtxRelease, (CUdevice dev))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDevicePrimaryCtxRelease, CUDA_ERROR_NOT_INITIALIZED);
    return primary_release("cuDevicePrimaryCtxRelease", dev, real);
}

GDRHOOK_WRAPPER(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDevicePrimaryCtxRelease_v2, CUDA_ERROR_NOT_INITIALIZED);
    return primary_release("cuDevicePrimaryCtxRelease_v2", dev, real);
}

GDRHOOK_WRAPPER(CUresult, cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDevicePrimaryCtxRetain, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(pctx, dev);
    if (rc == CUDA_SUCCESS && pctx && hook_enabled())
        note_primary_context_retained(dev, handle_u64(*pctx));
    return rc;
}

// ---- allocation ----------------------------------------------------------

#define GDRHOOK_RECORD_ALLOC(api, kind, addr, size)                                                \
    if (hook_enabled())                                                                            \
    record_alloc(api, current_via(), kind, addr, size, rc)

GDRHOOK_WRAPPER(CUresult, cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAlloc, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_sized("cuMemAlloc", MemoryKind::device, real, dptr, bytesize);
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAlloc_v2, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_sized("cuMemAlloc_v2", MemoryKind::device, real, dptr, bytesize);
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocPitch,
                (CUdeviceptr_v1 * dptr, unsigned int *pitch, unsigned int width,
                 unsigned int height, unsigned int element_size))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocPitch, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_pitch("cuMemAllocPitch", real, dptr, pitch, width, height, element_size);
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocPitch_v2,
                (CUdeviceptr * dptr, size_t *pitch, size_t width, size_t height,
                 unsigned int element_size))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocPitch_v2, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_pitch("cuMemAllocPitch_v2", real, dptr, pitch, width, height, element_size);
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemAllocAsync,
                    (CUdeviceptr * dptr, size_t bytesize, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocAsync, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(dptr, bytesize, stream);
    GDRHOOK_RECORD_ALLOC("cuMemAllocAsync", MemoryKind::pool, made(rc, dptr), bytesize);
    note_stream_allocation(stream, false, rc, dptr, bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocAsync_ptsz,
                (CUdeviceptr * dptr, size_t bytesize, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocAsync_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(dptr, bytesize, stream);
    GDRHOOK_RECORD_ALLOC("cuMemAllocAsync_ptsz", MemoryKind::pool, made(rc, dptr), bytesize);
    note_stream_allocation(stream, true, rc, dptr, bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocFromPoolAsync,
                (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocFromPoolAsync, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(dptr, bytesize, pool, stream);
    GDRHOOK_RECORD_ALLOC("cuMemAllocFromPoolAsync", MemoryKind::pool, made(rc, dptr), bytesize);
    note_stream_allocation(stream, false, rc, dptr, bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocFromPoolAsync_ptsz,
                (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocFromPoolAsync_ptsz, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(dptr, bytesize, pool, stream);
    GDRHOOK_RECORD_ALLOC("cuMemAllocFromPoolAsync_ptsz", MemoryKind::pool, made(rc, dptr),
                         bytesize);
    note_stream_allocation(stream, true, rc, dptr, bytesize);
    return rc;
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemCreate,
                    (CUmemGenericAllocationHandle * handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemCreate, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(handle, size, prop, flags);
    GDRHOOK_RECORD_ALLOC("cuMemCreate", MemoryKind::vmm_physical, made(rc, handle), size);
    return rc;
}

GDRHOOK_HOT_WRAPPER(CUresult, cuMemMap,
                    (CUdeviceptr ptr, size_t size, size_t offset,
                     CUmemGenericAllocationHandle handle, unsigned long long flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemMap, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(ptr, size, offset, handle, flags);
    GDRHOOK_RECORD_ALLOC("cuMemMap", MemoryKind::vmm_mapping, rc == CUDA_SUCCESS ? as_u64(ptr) : 0,
                         size);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocManaged,
                (CUdeviceptr * dptr, size_t bytesize, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocManaged, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(dptr, bytesize, flags);
    GDRHOOK_RECORD_ALLOC("cuMemAllocManaged", MemoryKind::managed, made(rc, dptr), bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocHost, (void **pp, unsigned int bytesize))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocHost, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_sized("cuMemAllocHost", MemoryKind::host, real, pp, bytesize);
}

GDRHOOK_WRAPPER(CUresult, cuMemAllocHost_v2, (void **pp, size_t bytesize))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemAllocHost_v2, CUDA_ERROR_NOT_INITIALIZED);
    return alloc_sized("cuMemAllocHost_v2", MemoryKind::host, real, pp, bytesize);
}

GDRHOOK_WRAPPER(CUresult, cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostAlloc, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(pp, bytesize, flags);
    GDRHOOK_RECORD_ALLOC("cuMemHostAlloc", MemoryKind::host, made(rc, pp), bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemHostRegister, (void *p, size_t bytesize, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostRegister, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(p, bytesize, flags);
    GDRHOOK_RECORD_ALLOC("cuMemHostRegister", MemoryKind::host_registered,
                         rc == CUDA_SUCCESS ? as_u64(p) : 0, bytesize);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostRegister_v2, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(p, bytesize, flags);
    GDRHOOK_RECORD_ALLOC("cuMemHostRegister_v2", MemoryKind::host_registered,
                         rc == CUDA_SUCCESS ? as_u64(p) : 0, bytesize);
    return rc;
}

// ---- host memory's device address ----------------------------------------

namespace {

template <typename Real, typename Out>
CUresult device_pointer_of_host(Real real, Out *pdptr, void *p, unsigned int flags)
{
    CUresult rc = real(pdptr, p, flags);
    if (rc == CUDA_SUCCESS && pdptr && hook_enabled())
        note_device_alias(as_u64(*pdptr), as_u64(p));
    return rc;
}

} // namespace

GDRHOOK_WRAPPER(CUresult, cuMemHostGetDevicePointer,
                (CUdeviceptr_v1 * pdptr, void *p, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostGetDevicePointer, CUDA_ERROR_NOT_INITIALIZED);
    return device_pointer_of_host(real, pdptr, p, flags);
}

GDRHOOK_WRAPPER(CUresult, cuMemHostGetDevicePointer_v2,
                (CUdeviceptr * pdptr, void *p, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuMemHostGetDevicePointer_v2, CUDA_ERROR_NOT_INITIALIZED);
    return device_pointer_of_host(real, pdptr, p, flags);
}

GDRHOOK_WRAPPER(CUresult, cuIpcOpenMemHandle,
                (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuIpcOpenMemHandle, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(pdptr, handle, flags);
    GDRHOOK_RECORD_ALLOC("cuIpcOpenMemHandle", MemoryKind::ipc, made(rc, pdptr),
                         0 /* recorder asks the driver */);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuIpcOpenMemHandle_v2,
                (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int flags))
{
    GDRHOOK_REAL_OR_RETURN(real, cuIpcOpenMemHandle_v2, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(pdptr, handle, flags);
    GDRHOOK_RECORD_ALLOC("cuIpcOpenMemHandle_v2", MemoryKind::ipc, made(rc, pdptr),
                         0 /* recorder asks the driver */);
    return rc;
}
