// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The driver functions the test programs call, filled in through one of the
// resolution paths an application can use, so that the same sequence of
// calls is exercised through each of them.
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1
#include "cuda_checks.h"

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

struct DriverApi {
    decltype(&cuInit) init;
    decltype(&cuDevicePrimaryCtxRetain) primary_retain;
    decltype(&cuDevicePrimaryCtxRelease_v2) primary_release;
    decltype(&cuCtxSetCurrent) ctx_set_current;
    decltype(&cuCtxCreate_v2) ctx_create;
    decltype(&cuCtxDestroy_v2) ctx_destroy;
    decltype(&cuMemAlloc_v2) mem_alloc;
    decltype(&cuMemFree_v2) mem_free;
    decltype(&cuMemAllocPitch_v2) mem_alloc_pitch;
    decltype(&cuMemAllocAsync) mem_alloc_async;
    decltype(&cuMemAllocAsync_ptsz) mem_alloc_async_ptsz;
    decltype(&cuMemFreeAsync) mem_free_async;
    decltype(&cuMemFreeAsync_ptsz) mem_free_async_ptsz;
    decltype(&cuMemPoolCreate) pool_create;
    decltype(&cuMemAllocFromPoolAsync) mem_alloc_from_pool;
    decltype(&cuMemPoolTrimTo) pool_trim;
    decltype(&cuMemPoolDestroy) pool_destroy;
    decltype(&cuMemAllocManaged) mem_alloc_managed;
    decltype(&cuMemAllocHost_v2) mem_alloc_host;
    decltype(&cuMemHostAlloc) mem_host_alloc;
    decltype(&cuMemFreeHost) mem_free_host;
    decltype(&cuMemHostRegister_v2) host_register;
    decltype(&cuMemHostUnregister) host_unregister;
    decltype(&cuMemAddressReserve) address_reserve;
    decltype(&cuMemAddressFree) address_free;
    decltype(&cuMemCreate) mem_create;
    decltype(&cuMemRelease) mem_release;
    decltype(&cuMemMap) mem_map;
    decltype(&cuMemUnmap) mem_unmap;
    decltype(&cuIpcGetMemHandle) ipc_get;
    decltype(&cuIpcOpenMemHandle_v2) ipc_open;
    decltype(&cuIpcCloseMemHandle) ipc_close;
    // Before CUDA 3.2 (cuGetProcAddress version 2000).
    decltype(&cuMemAlloc) mem_alloc_v1;
    decltype(&cuMemAllocPitch) mem_alloc_pitch_v1;
    decltype(&cuMemFree) mem_free_v1;
    decltype(&cuMemAllocHost) mem_alloc_host_v1;
};

// Counts the call `name` in the map `made`, makes it, and exits with status
// 2 (and a line on stderr) if it fails.
#define COUNTED_CALL(made, call, name)                                                             \
    do {                                                                                           \
        ++made[name];                                                                              \
        CHECK_CU_OR_EXIT(call, 2);                                                                 \
    } while (0)

// (field, cuGetProcAddress base name, exported symbol, per-thread variant,
//  cuGetProcAddress version: 0 for the lookup's own)
#define FIELDS(X)                                                                                  \
    X(init, cuInit, cuInit, false, 0)                                                              \
    X(primary_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, false, 0)                \
    X(primary_release, cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, false, 0)          \
    X(ctx_set_current, cuCtxSetCurrent, cuCtxSetCurrent, false, 0)                                 \
    X(ctx_create, cuCtxCreate, cuCtxCreate_v2, false, 0)                                           \
    X(ctx_destroy, cuCtxDestroy, cuCtxDestroy_v2, false, 0)                                        \
    X(mem_alloc, cuMemAlloc, cuMemAlloc_v2, false, 0)                                              \
    X(mem_free, cuMemFree, cuMemFree_v2, false, 0)                                                 \
    X(mem_alloc_pitch, cuMemAllocPitch, cuMemAllocPitch_v2, false, 0)                              \
    X(mem_alloc_async, cuMemAllocAsync, cuMemAllocAsync, false, 0)                                 \
    X(mem_alloc_async_ptsz, cuMemAllocAsync, cuMemAllocAsync_ptsz, true, 0)                        \
    X(mem_free_async, cuMemFreeAsync, cuMemFreeAsync, false, 0)                                    \
    X(mem_free_async_ptsz, cuMemFreeAsync, cuMemFreeAsync_ptsz, true, 0)                           \
    X(pool_create, cuMemPoolCreate, cuMemPoolCreate, false, 0)                                     \
    X(mem_alloc_from_pool, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, false, 0)             \
    X(pool_trim, cuMemPoolTrimTo, cuMemPoolTrimTo, false, 0)                                       \
    X(pool_destroy, cuMemPoolDestroy, cuMemPoolDestroy, false, 0)                                  \
    X(mem_alloc_managed, cuMemAllocManaged, cuMemAllocManaged, false, 0)                           \
    X(mem_alloc_host, cuMemAllocHost, cuMemAllocHost_v2, false, 0)                                 \
    X(mem_host_alloc, cuMemHostAlloc, cuMemHostAlloc, false, 0)                                    \
    X(mem_free_host, cuMemFreeHost, cuMemFreeHost, false, 0)                                       \
    X(host_register, cuMemHostRegister, cuMemHostRegister_v2, false, 0)                            \
    X(host_unregister, cuMemHostUnregister, cuMemHostUnregister, false, 0)                         \
    X(address_reserve, cuMemAddressReserve, cuMemAddressReserve, false, 0)                         \
    X(address_free, cuMemAddressFree, cuMemAddressFree, false, 0)                                  \
    X(mem_create, cuMemCreate, cuMemCreate, false, 0)                                              \
    X(mem_release, cuMemRelease, cuMemRelease, false, 0)                                           \
    X(mem_map, cuMemMap, cuMemMap, false, 0)                                                       \
    X(mem_unmap, cuMemUnmap, cuMemUnmap, false, 0)                                                 \
    X(ipc_get, cuIpcGetMemHandle, cuIpcGetMemHandle, false, 0)                                     \
    X(ipc_open, cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, false, 0)                               \
    X(ipc_close, cuIpcCloseMemHandle, cuIpcCloseMemHandle, false, 0)                               \
    X(mem_alloc_v1, cuMemAlloc, cuMemAlloc, false, 2000)                                           \
    X(mem_alloc_pitch_v1, cuMemAllocPitch, cuMemAllocPitch, false, 2000)                           \
    X(mem_free_v1, cuMemFree, cuMemFree, false, 2000)                                              \
    X(mem_alloc_host_v1, cuMemAllocHost, cuMemAllocHost, false, 2000)

// A lookup by base name, as cuGetProcAddress takes it, for `version` (0:
// the lookup's own); per_thread asks for the per-thread-default-stream
// variant.
using BaseNameLookup = void *(*)(const char *base, int version, bool per_thread);
// A lookup by exported (versioned) symbol name, as dlsym takes it.
using SymbolLookup = void *(*)(const char *symbol);

bool fill_by_base_name(DriverApi &api, BaseNameLookup lookup);
bool fill_by_symbol(DriverApi &api, SymbolLookup lookup);

// Every field from the exported symbols the program links against.
void fill_by_linked_symbols(DriverApi &api);

// libcuda.so.1, dlopen()ed once (RTLD_LOCAL), and dlsym on that handle.
void *libcuda_handle();
void *libcuda_dlsym(const char *symbol);

// cuGetProcAddress_v2 found with dlsym on libcuda's handle, then asked for
// itself and that answer used from here on, as frameworks do.
bool resolve_proc_address_v2();
// A lookup through it (CUDA 13.0), once resolve_proc_address_v2() succeeded.
void *proc_lookup_v2(const char *base, int version, bool per_thread);

// A 2 MiB VMM round trip: reserve a range, create memory, map, unmap,
// release, free the range. Counts each call in `made`; returns the name of
// the first call that failed, or nullptr.
// The range and the memory handle come back in `va` and `handle`.
const char *vmm_round_trip(const DriverApi &api, std::map<std::string, long> &made,
                           CUdeviceptr *va = nullptr,
                           CUmemGenericAllocationHandle *handle = nullptr);
