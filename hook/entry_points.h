// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one table of intercepted entry points. Everything else (exported
// wrappers, the dlsym and cuGetProcAddress lookups, the real-function slots)
// is derived from it.
//
// DRIVER(symbol, base name, first driver version, per-thread-stream variant)
//   symbol:   the name libcuda exports
//   base:     the name cuGetProcAddress is asked for
//   version:  the lowest CUDA version for which cuGetProcAddress(base)
//             returns this symbol (from cudaTypedefs.h's PFN_*_vNNNN)
//   ptsz:     1 for the variant returned with
//             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// The forms without _v2 at version 2000 are those of binaries built before
// CUDA 3.2 (32-bit device pointers and sizes); libcuda still exports them.
// RUNTIME(symbol): a libcudart entry point, found after us with RTLD_NEXT.
#pragma once

#define GDRHOOK_DRIVER_ENTRY_POINTS(DRIVER)                                                        \
    /* deallocation */                                                                             \
    DRIVER(cuMemFree, cuMemFree, 2000, 0)                                                          \
    DRIVER(cuMemFree_v2, cuMemFree, 3020, 0)                                                       \
    DRIVER(cuMemFreeAsync, cuMemFreeAsync, 11020, 0)                                               \
    DRIVER(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 1)                                          \
    DRIVER(cuMemFreeHost, cuMemFreeHost, 2000, 0)                                                  \
    DRIVER(cuMemHostUnregister, cuMemHostUnregister, 4000, 0)                                      \
    DRIVER(cuMemUnmap, cuMemUnmap, 10020, 0)                                                       \
    DRIVER(cuMemRelease, cuMemRelease, 10020, 0)                                                   \
    DRIVER(cuMemAddressFree, cuMemAddressFree, 10020, 0)                                           \
    DRIVER(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, 0)                                             \
    DRIVER(cuMemPoolDestroy, cuMemPoolDestroy, 11020, 0)                                           \
    DRIVER(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, 0)                                      \
    DRIVER(cuCtxDestroy, cuCtxDestroy, 2000, 0)                                                    \
    DRIVER(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                                                 \
    DRIVER(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0)                              \
    DRIVER(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)                          \
    DRIVER(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0)                          \
    DRIVER(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0)                      \
    /* allocation */                                                                               \
    DRIVER(cuMemAlloc, cuMemAlloc, 2000, 0)                                                        \
    DRIVER(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                                                     \
    DRIVER(cuMemAllocPitch, cuMemAllocPitch, 2000, 0)                                              \
    DRIVER(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                                           \
    DRIVER(cuMemAllocAsync, cuMemAllocAsync, 11020, 0)                                             \
    DRIVER(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 1)                                        \
    DRIVER(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0)                             \
    DRIVER(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 1)                        \
    DRIVER(cuMemCreate, cuMemCreate, 10020, 0)                                                     \
    DRIVER(cuMemMap, cuMemMap, 10020, 0)                                                           \
    DRIVER(cuMemAllocManaged, cuMemAllocManaged, 6000, 0)                                          \
    DRIVER(cuMemAllocHost, cuMemAllocHost, 2000, 0)                                                \
    DRIVER(cuMemAllocHost_v2, cuMemAllocHost, 3020, 0)                                             \
    DRIVER(cuMemHostAlloc, cuMemHostAlloc, 2020, 0)                                                \
    DRIVER(cuMemHostRegister, cuMemHostRegister, 4000, 0)                                          \
    DRIVER(cuMemHostRegister_v2, cuMemHostRegister, 6050, 0)                                       \
    /* host memory's device address (cache/core/host_aliases.h) */                                 \
    DRIVER(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer, 2020, 0)                          \
    DRIVER(cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer, 3020, 0)                       \
    DRIVER(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, 0)                                        \
    DRIVER(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, 0)                                    \
    DRIVER(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)                            \
    /* graph memory (cache/record/graph_memory.h): the node that makes it,  \
       the calls that release it */                      \
    DRIVER(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 11040, 0)                               \
    DRIVER(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode, 11040, 0)                                 \
    DRIVER(cuDeviceGraphMemTrim, cuDeviceGraphMemTrim, 11040, 0)                                   \
    DRIVER(cuGraphDestroy, cuGraphDestroy, 10000, 0)                                               \
    DRIVER(cuGraphExecDestroy, cuGraphExecDestroy, 10000, 0)                                       \
    /* stream capture (cache/base/capture.h) */                                                    \
    DRIVER(cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0)                                   \
    DRIVER(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, 1)                              \
    DRIVER(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0)                                \
    DRIVER(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 1)                           \
    DRIVER(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, 0)                     \
    DRIVER(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, 1)                \
    DRIVER(cuStreamEndCapture, cuStreamEndCapture, 10000, 0)                                       \
    DRIVER(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, 1)                                  \
    /* pointer queries (cache/pointers/pointer_answers.h) */                                       \
    DRIVER(cuPointerGetAttribute, cuPointerGetAttribute, 4000, 0)                                  \
    DRIVER(cuPointerGetAttributes, cuPointerGetAttributes, 7000, 0)                                \
    /* resolution */                                                                               \
    DRIVER(cuGetProcAddress, cuGetProcAddress, 11030, 0)                                           \
    DRIVER(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)

#define GDRHOOK_RUNTIME_ENTRY_POINTS(RUNTIME)                                                      \
    RUNTIME(cudaFree)                                                                              \
    RUNTIME(cudaFreeAsync)                                                                         \
    RUNTIME(cudaFreeAsync_ptsz)                                                                    \
    RUNTIME(cudaFreeHost)                                                                          \
    RUNTIME(cudaDeviceReset)                                                                       \
    RUNTIME(cudaStreamBeginCapture)                                                                \
    RUNTIME(cudaStreamBeginCapture_ptsz)                                                           \
    RUNTIME(cudaStreamEndCapture)                                                                  \
    RUNTIME(cudaStreamEndCapture_ptsz)                                                             \
    RUNTIME(cudaGetDriverEntryPoint)                                                               \
    RUNTIME(cudaGetDriverEntryPoint_ptsz)                                                          \
    RUNTIME(cudaGetDriverEntryPointByVersion)                                                      \
    RUNTIME(cudaGetDriverEntryPointByVersion_ptsz)

// The entry points a running program calls over and over (a caching
// allocator growing and trimming, a pool's frees, VMM mappings, a
// registration cache's tag check on every hit): their
// wrappers and thunks go on the hot pages with the recorder (hot_path.h),
// the others, called a few times per process, do not. Each page the path
// spans is a TLB miss per call on a real GPU.
#define GDRHOOK_HOT_ENTRY_POINTS(X)                                                                \
    X(cuMemFree_v2)                                                                                \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemCreate)                                                                                 \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemRelease)                                                                                \
    X(cuPointerGetAttribute)                                                                       \
    X(cuPointerGetAttributes)                                                                      \
    X(cudaFree)

namespace gdrhook {

enum class EntryId : int {
#define GDRHOOK_ID(symbol, ...) symbol,
    GDRHOOK_DRIVER_ENTRY_POINTS(GDRHOOK_ID) GDRHOOK_RUNTIME_ENTRY_POINTS(GDRHOOK_ID)
#undef GDRHOOK_ID
        count
};

inline constexpr int entry_count = static_cast<int>(EntryId::count);

// The hot entries numbered among themselves: their real-function slots sit
// with the other hot globals (real_functions.h), the rest elsewhere.
enum class HotEntryId : int {
#define GDRHOOK_HOT_ID(symbol) symbol,
    GDRHOOK_HOT_ENTRY_POINTS(GDRHOOK_HOT_ID)
#undef GDRHOOK_HOT_ID
        count
};

inline constexpr int hot_entry_count = static_cast<int>(HotEntryId::count);

// -1 for an entry that is not hot.
constexpr int hot_index(EntryId id)
{
#define GDRHOOK_HOT_INDEX(symbol)                                                                  \
    if (id == EntryId::symbol)                                                                     \
        return static_cast<int>(HotEntryId::symbol);
    GDRHOOK_HOT_ENTRY_POINTS(GDRHOOK_HOT_INDEX)
#undef GDRHOOK_HOT_INDEX
    return -1;
}

constexpr bool is_hot_entry(EntryId id)
{
    return hot_index(id) >= 0;
}

} // namespace gdrhook
