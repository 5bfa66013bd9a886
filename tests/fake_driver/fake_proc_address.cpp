// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// cuGetProcAddress of the fake driver: base name + version + flags to one
// of the driver's own functions, as the real driver answers.
#include "fake_state.h"

#include <cstring>

using namespace fake;

namespace {

struct ProcEntry {
    const char *base;
    int version; // lowest CUDA version answered with this function
    bool per_thread;
    void *function;
};

#define ENTRY(base, version, ptsz, fn)                                                             \
    {                                                                                              \
#base, version, ptsz, reinterpret_cast < void *>(&fn)                                      \
    }

extern "C" CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
extern "C" CUresult cuStreamBeginCapture_ptsz(CUstream);
extern "C" CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
extern "C" CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph *);
extern "C" CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

const ProcEntry table[] = {
    ENTRY(cuInit, 2000, false, cuInit),
    ENTRY(cuDriverGetVersion, 2020, false, cuDriverGetVersion),
    ENTRY(cuDeviceGet, 2000, false, cuDeviceGet),
    ENTRY(cuDeviceGetCount, 2000, false, cuDeviceGetCount),
    ENTRY(cuDeviceGetAttribute, 2000, false, cuDeviceGetAttribute),
    ENTRY(cuCtxCreate, 3020, false, cuCtxCreate_v2),
    ENTRY(cuCtxDestroy, 2000, false, cuCtxDestroy),
    ENTRY(cuCtxDestroy, 4000, false, cuCtxDestroy_v2),
    ENTRY(cuCtxSetCurrent, 4000, false, cuCtxSetCurrent),
    ENTRY(cuCtxGetCurrent, 4000, false, cuCtxGetCurrent),
    ENTRY(cuCtxGetDevice, 2000, false, cuCtxGetDevice),
    ENTRY(cuCtxSynchronize, 2000, false, cuCtxSynchronize),
    ENTRY(cuDevicePrimaryCtxRetain, 7000, false, cuDevicePrimaryCtxRetain),
    ENTRY(cuDevicePrimaryCtxRelease, 7000, false, cuDevicePrimaryCtxRelease),
    ENTRY(cuDevicePrimaryCtxRelease, 11000, false, cuDevicePrimaryCtxRelease_v2),
    ENTRY(cuDevicePrimaryCtxReset, 7000, false, cuDevicePrimaryCtxReset),
    ENTRY(cuDevicePrimaryCtxReset, 11000, false, cuDevicePrimaryCtxReset_v2),
    ENTRY(cuMemAlloc, 2000, false, cuMemAlloc),
    ENTRY(cuMemAlloc, 3020, false, cuMemAlloc_v2),
    ENTRY(cuMemAllocPitch, 2000, false, cuMemAllocPitch),
    ENTRY(cuMemAllocPitch, 3020, false, cuMemAllocPitch_v2),
    ENTRY(cuMemFree, 2000, false, cuMemFree),
    ENTRY(cuMemFree, 3020, false, cuMemFree_v2),
    ENTRY(cuMemGetAddressRange, 3020, false, cuMemGetAddressRange_v2),
    ENTRY(cuMemGetInfo, 3020, false, cuMemGetInfo_v2),
    ENTRY(cuMemAllocAsync, 11020, false, cuMemAllocAsync),
    ENTRY(cuMemAllocAsync, 11020, true, cuMemAllocAsync_ptsz),
    ENTRY(cuMemAllocFromPoolAsync, 11020, false, cuMemAllocFromPoolAsync),
    ENTRY(cuMemAllocFromPoolAsync, 11020, true, cuMemAllocFromPoolAsync_ptsz),
    ENTRY(cuMemFreeAsync, 11020, false, cuMemFreeAsync),
    ENTRY(cuMemFreeAsync, 11020, true, cuMemFreeAsync_ptsz),
    ENTRY(cuMemPoolCreate, 11020, false, cuMemPoolCreate),
    ENTRY(cuMemPoolDestroy, 11020, false, cuMemPoolDestroy),
    ENTRY(cuMemPoolTrimTo, 11020, false, cuMemPoolTrimTo),
    ENTRY(cuMemAllocManaged, 6000, false, cuMemAllocManaged),
    ENTRY(cuMemAllocHost, 2000, false, cuMemAllocHost),
    ENTRY(cuMemAllocHost, 3020, false, cuMemAllocHost_v2),
    ENTRY(cuMemHostAlloc, 2020, false, cuMemHostAlloc),
    ENTRY(cuMemFreeHost, 2000, false, cuMemFreeHost),
    ENTRY(cuMemHostRegister, 4000, false, cuMemHostRegister),
    ENTRY(cuMemHostRegister, 6050, false, cuMemHostRegister_v2),
    ENTRY(cuMemHostUnregister, 4000, false, cuMemHostUnregister),
    ENTRY(cuMemHostGetDevicePointer, 2020, false, cuMemHostGetDevicePointer),
    ENTRY(cuMemHostGetDevicePointer, 3020, false, cuMemHostGetDevicePointer_v2),
    ENTRY(cuMemAddressReserve, 10020, false, cuMemAddressReserve),
    ENTRY(cuMemAddressFree, 10020, false, cuMemAddressFree),
    ENTRY(cuMemCreate, 10020, false, cuMemCreate),
    ENTRY(cuMemRelease, 10020, false, cuMemRelease),
    ENTRY(cuMemMap, 10020, false, cuMemMap),
    ENTRY(cuMemUnmap, 10020, false, cuMemUnmap),
    ENTRY(cuMemSetAccess, 10020, false, cuMemSetAccess),
    ENTRY(cuMemGetAllocationGranularity, 10020, false, cuMemGetAllocationGranularity),
    ENTRY(cuPointerGetAttribute, 4000, false, cuPointerGetAttribute),
    ENTRY(cuPointerGetAttributes, 7000, false, cuPointerGetAttributes),
    ENTRY(cuPointerSetAttribute, 6000, false, cuPointerSetAttribute),
    ENTRY(cuMemGetHandleForAddressRange, 11070, false, cuMemGetHandleForAddressRange),
    ENTRY(cuIpcGetMemHandle, 4010, false, cuIpcGetMemHandle),
    ENTRY(cuIpcOpenMemHandle, 4010, false, cuIpcOpenMemHandle),
    ENTRY(cuIpcOpenMemHandle, 11000, false, cuIpcOpenMemHandle_v2),
    ENTRY(cuIpcCloseMemHandle, 4010, false, cuIpcCloseMemHandle),
    ENTRY(cuGetErrorString, 6000, false, cuGetErrorString),
    ENTRY(cuStreamCreate, 2000, false, cuStreamCreate),
    ENTRY(cuStreamDestroy, 4000, false, cuStreamDestroy_v2),
    ENTRY(cuStreamSynchronize, 2000, false, cuStreamSynchronize),
    ENTRY(cuStreamBeginCapture, 10000, false, cuStreamBeginCapture),
    ENTRY(cuStreamBeginCapture, 10000, true, cuStreamBeginCapture_ptsz),
    ENTRY(cuStreamBeginCapture, 10010, false, cuStreamBeginCapture_v2),
    ENTRY(cuStreamBeginCapture, 10010, true, cuStreamBeginCapture_v2_ptsz),
    ENTRY(cuStreamEndCapture, 10000, false, cuStreamEndCapture),
    ENTRY(cuStreamEndCapture, 10000, true, cuStreamEndCapture_ptsz),
    ENTRY(cuStreamIsCapturing, 10000, false, cuStreamIsCapturing),
    ENTRY(cuThreadExchangeStreamCaptureMode, 10010, false, cuThreadExchangeStreamCaptureMode),
    ENTRY(cuStreamGetCaptureInfo, 11030, false, cuStreamGetCaptureInfo_v2),
    ENTRY(cuGraphCreate, 10000, false, cuGraphCreate),
    ENTRY(cuGraphDestroy, 10000, false, cuGraphDestroy),
    ENTRY(cuGraphAddMemAllocNode, 11040, false, cuGraphAddMemAllocNode),
    ENTRY(cuGraphAddMemFreeNode, 11040, false, cuGraphAddMemFreeNode),
    ENTRY(cuGraphInstantiate, 12000, false, cuGraphInstantiateWithFlags),
    ENTRY(cuGraphInstantiateWithFlags, 11040, false, cuGraphInstantiateWithFlags),
    ENTRY(cuGraphLaunch, 10000, false, cuGraphLaunch),
    ENTRY(cuGraphExecDestroy, 10000, false, cuGraphExecDestroy),
    ENTRY(cuDeviceGraphMemTrim, 11040, false, cuDeviceGraphMemTrim),
    ENTRY(cuGetProcAddress, 11030, false, cuGetProcAddress),
    ENTRY(cuGetProcAddress, 12000, false, cuGetProcAddress_v2),
};

void *lookup(const char *symbol, int version, bool per_thread)
{
    const ProcEntry *best = nullptr;
    for (const ProcEntry &entry : table) {
        if (strcmp(entry.base, symbol) != 0 || entry.version > version)
            continue;
        if (entry.per_thread && !per_thread)
            continue;
        if (!best || (entry.per_thread && !best->per_thread) ||
            (entry.per_thread == best->per_thread && entry.version > best->version))
            best = &entry;
    }
    return best ? best->function : nullptr;
}

} // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (CUresult injected = count_call("cuGetProcAddress_v2"))
        return injected;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = lookup(symbol, version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// The driver's private interface to its own runtime: the real runtime asks
// cuGetExportTable for tables of internal functions, by UUID, and calls
// them without passing any exported symbol. The fake's one table (its UUID
// is the fake runtime's, fake_cudart.cpp) holds its cuGetProcAddress_v2:
// -Bsymbolic, so its own, whoever interposes the exported name.
CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    static const CUuuid runtime_table_id = {
        {'f', 'a', 'k', 'e', 'c', 'u', 'd', 'a', 'r', 't', 'p', 'r', 'o', 'c', 's', '1'}};
    struct RuntimeTable {
        size_t size;
        CUresult (*get_proc_address)(const char *, void **, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult *);
    };
    static const RuntimeTable runtime_table = {sizeof(RuntimeTable), cuGetProcAddress_v2};
    if (CUresult injected = count_call("cuGetExportTable"))
        return injected;
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(id, &runtime_table_id, sizeof(*id)) != 0)
        return CUDA_ERROR_NOT_FOUND;
    *table = &runtime_table;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (CUresult injected = count_call("cuGetProcAddress"))
        return injected;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = lookup(symbol, version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

} // extern "C"
