// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The few driver queries the recorder needs (sizes of untracked frees, the
// context and device of an allocation), answered by the real libcuda.
// These entry points are not intercepted, so they are looked up directly.
#include "hook/runtime_start.h"

#include "cache/core/runtime.h"
#include "hook/cuda_api.h"
#include "hook/real_functions.h"

#include <atomic>
#include <cstdio>
#include <type_traits>

namespace gdrhook {

// cache/base/driver_api.h spells these without cuda.h.
static_assert(cuda::success == CUDA_SUCCESS);
static_assert(cuda::error_invalid_value == CUDA_ERROR_INVALID_VALUE);
static_assert(cuda::error_out_of_memory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(cuda::error_not_supported == CUDA_ERROR_NOT_SUPPORTED);
static_assert(cuda::mem_range_handle_type_dma_buf_fd == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
static_assert(cuda::pointer_attribute_sync_memops == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS);
static_assert(cuda::pointer_attribute_buffer_id == CU_POINTER_ATTRIBUTE_BUFFER_ID);
static_assert(cuda::pointer_attribute_is_managed == CU_POINTER_ATTRIBUTE_IS_MANAGED);
static_assert(cuda::pointer_attribute_memory_type == CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
static_assert(cuda::pointer_attribute_is_legacy_cuda_ipc_capable ==
              CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE);
static_assert(cuda::pointer_attribute_mempool_handle == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE);
static_assert(cuda::memorytype_device == CU_MEMORYTYPE_DEVICE);
static_assert(cuda::device_attribute_dma_buf_supported == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
static_assert(cuda::device_attribute_host_alloc_dma_buf_supported ==
              CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED);
static_assert(cuda::memorytype_host == CU_MEMORYTYPE_HOST);
static_assert(cuda::pointer_attribute_context == CU_POINTER_ATTRIBUTE_CONTEXT);
static_assert(cuda::pointer_attribute_device_ordinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
static_assert(cuda::pointer_attribute_range_start_addr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
static_assert(cuda::pointer_attribute_range_size == CU_POINTER_ATTRIBUTE_RANGE_SIZE);

template <typename F> F lookup_driver(std::atomic<void *> &cache, const char *symbol)
{
    void *function = cache.load(std::memory_order_acquire);
    if (!function) {
        void *handle = libcuda_handle();
        DlsymFunction lookup = real_dlsym();
        if (handle && lookup)
            function = lookup(handle, symbol);
        cache.store(function, std::memory_order_release);
    }
    return reinterpret_cast<F>(function);
}

std::atomic<void *> address_range_fn{nullptr};
std::atomic<void *> current_device_fn{nullptr};

bool address_range(uint64_t addr, uint64_t *base, uint64_t *size)
{
    auto fn = lookup_driver<decltype(&::cuMemGetAddressRange_v2)>(address_range_fn,
                                                                  "cuMemGetAddressRange_v2");
    CUdeviceptr b = 0;
    size_t s = 0;
    if (!fn || fn(&b, &s, static_cast<CUdeviceptr>(addr)) != CUDA_SUCCESS)
        return false;
    *base = b;
    *size = s;
    return true;
}

// Also hands the driver's function to the runtime, which puts it on the
// hot line: the recorder calls it directly from then on.
uint64_t current_context()
{
    static_assert(std::is_same_v<decltype(&::cuCtxGetCurrent), CUresult (*)(CUcontext *)>,
                  "hot_line.context_query has this ABI");
    static std::atomic<void *> looked_up{nullptr};
    auto fn = lookup_driver<decltype(&::cuCtxGetCurrent)>(looked_up, "cuCtxGetCurrent");
    publish_context_query(reinterpret_cast<int (*)(void **)>(fn));
    CUcontext context = nullptr;
    if (!fn || fn(&context) != CUDA_SUCCESS)
        return 0;
    return reinterpret_cast<uint64_t>(context);
}

int32_t current_device()
{
    auto fn = lookup_driver<decltype(&::cuCtxGetDevice)>(current_device_fn, "cuCtxGetDevice");
    CUdevice device = -1;
    if (!fn || fn(&device) != CUDA_SUCCESS)
        return -1;
    return device;
}

uint64_t capture_graph(uint64_t stream, bool per_thread)
{
    static std::atomic<void *> looked_up{nullptr};
    auto fn = lookup_driver<decltype(&::cuStreamGetCaptureInfo_v2)>(looked_up,
                                                                    "cuStreamGetCaptureInfo_v2");
    CUstream handle = reinterpret_cast<CUstream>(stream);
    if (!handle && per_thread)
        handle = CU_STREAM_PER_THREAD;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    if (!fn || fn(handle, &status, nullptr, &graph, nullptr, nullptr) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return 0;
    return reinterpret_cast<uint64_t>(graph);
}

// The registration cache's backends call these. dlsym answers once per
// name, when the cache is created; the plain-int signatures of
// cache/base/driver_api.h are the same ABI as cuda.h's enums and CUresult.
void driver_api(DriverApi *out)
{
    void *handle = libcuda_handle();
    DlsymFunction lookup = real_dlsym();
    if (!handle || !lookup)
        return;
    auto find = [&](auto &slot, const char *symbol) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(lookup(handle, symbol));
    };
    find(out->mem_get_handle_for_address_range, "cuMemGetHandleForAddressRange");
    find(out->pointer_set_attribute, "cuPointerSetAttribute");
    find(out->pointer_get_attribute, "cuPointerGetAttribute");
    find(out->pointer_get_attributes, "cuPointerGetAttributes");
    find(out->device_get_attribute, "cuDeviceGetAttribute");
}

// For the log's process line, asked once when the log file is created.
int driver_version()
{
    static std::atomic<void *> looked_up{nullptr};
    auto fn = lookup_driver<decltype(&::cuDriverGetVersion)>(looked_up, "cuDriverGetVersion");
    int version = -1;
    return fn && fn(&version) == CUDA_SUCCESS ? version : -1;
}

int device_count()
{
    static std::atomic<void *> looked_up{nullptr};
    auto fn = lookup_driver<decltype(&::cuDeviceGetCount)>(looked_up, "cuDeviceGetCount");
    int count = 0;
    return fn && fn(&count) == CUDA_SUCCESS ? count : 0;
}

bool device_identity(int ordinal, char *name, size_t name_size, char *uuid, size_t uuid_size,
                     char *pci_bus_id, size_t pci_size)
{
    static std::atomic<void *> get{nullptr}, get_name{nullptr}, get_uuid{nullptr}, get_pci{nullptr};
    auto device_get = lookup_driver<decltype(&::cuDeviceGet)>(get, "cuDeviceGet");
    auto name_of = lookup_driver<decltype(&::cuDeviceGetName)>(get_name, "cuDeviceGetName");
    auto uuid_of = lookup_driver<decltype(&::cuDeviceGetUuid_v2)>(get_uuid, "cuDeviceGetUuid_v2");
    auto pci_of = lookup_driver<decltype(&::cuDeviceGetPCIBusId)>(get_pci, "cuDeviceGetPCIBusId");
    CUdevice device = 0;
    if (!device_get || device_get(&device, ordinal) != CUDA_SUCCESS)
        return false;
    if (!name_of || name_of(name, static_cast<int>(name_size), device) != CUDA_SUCCESS)
        name[0] = '\0';
    CUuuid id{};
    if (uuid_of && uuid_of(&id, device) == CUDA_SUCCESS && uuid_size >= 41) {
        // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi writes it.
        const auto *b = reinterpret_cast<const unsigned char *>(id.bytes);
        snprintf(uuid, uuid_size,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
    }
    if (!pci_of || pci_of(pci_bus_id, static_cast<int>(pci_size), device) != CUDA_SUCCESS)
        pci_bus_id[0] = '\0';
    return true;
}

const DriverQueries &hook_driver_queries()
{
    static const DriverQueries queries = {address_range, current_context, current_device,
                                          capture_graph, driver_api,      driver_version,
                                          device_count,  device_identity};
    return queries;
}

} // namespace gdrhook
