// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The few CUDA driver functions the cache's backends call, as a struct of
// function pointers: the shim fills it with the real driver's functions
// (never its own wrappers), tests with fakes. The cache library is built
// without cuda.h, so the types are the plain-integer ABI equivalents:
// CUresult and every CUDA enum are `int`, CUdeviceptr is `unsigned long
// long` on 64-bit Linux. hook/driver_queries.cpp checks the constants
// against cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gdrhook {

namespace cuda {
inline constexpr int success = 0;
inline constexpr int error_invalid_value = 1;
inline constexpr int error_out_of_memory = 2;
inline constexpr int error_not_supported = 801;
inline constexpr int mem_range_handle_type_dma_buf_fd = 1;
inline constexpr int pointer_attribute_sync_memops = 6;
inline constexpr int pointer_attribute_buffer_id = 7;
inline constexpr int pointer_attribute_is_managed = 8;
inline constexpr int pointer_attribute_memory_type = 2;
inline constexpr int pointer_attribute_context = 1;
inline constexpr int pointer_attribute_device_ordinal = 9;
inline constexpr int pointer_attribute_range_start_addr = 11;
inline constexpr int pointer_attribute_range_size = 12;
inline constexpr int pointer_attribute_is_legacy_cuda_ipc_capable = 10;
inline constexpr int pointer_attribute_mempool_handle = 17;
inline constexpr int memorytype_device = 2;
inline constexpr int device_attribute_integrated = 18;
inline constexpr int device_attribute_dma_buf_supported = 124;
inline constexpr int device_attribute_host_alloc_dma_buf_supported = 146;
inline constexpr int memorytype_host = 1;
} // namespace cuda

struct DriverApi {
    // cuMemGetHandleForAddressRange
    int (*mem_get_handle_for_address_range)(void *handle, unsigned long long dptr, size_t size,
                                            int handle_type, unsigned long long flags) = nullptr;
    // cuPointerSetAttribute
    int (*pointer_set_attribute)(const void *value, int attribute,
                                 unsigned long long ptr) = nullptr;
    // cuPointerGetAttribute
    int (*pointer_get_attribute)(void *data, int attribute, unsigned long long ptr) = nullptr;
    // cuPointerGetAttributes: unlike the one above, never an error for an
    // attribute the memory lacks (it answers 0).
    int (*pointer_get_attributes)(unsigned int count, int *attributes, void **data,
                                  unsigned long long ptr) = nullptr;
    // cuDeviceGetAttribute
    int (*device_get_attribute)(int *value, int attribute, int device) = nullptr;
};

// Whether addr is memory mapped with cuMemMap (VMM: PyTorch's expandable
// segments, JAX, NCCL's buffers): device memory that is neither from
// cuMemAlloc (legacy IPC capable), nor from a pool, nor managed. Asked with
// cuPointerGetAttributes, which fails for no attribute: the shim must not
// make driver calls that fail where the program's own succeed (a tool such
// as compute-sanitizer reports each one as the program's error).
inline bool is_vmm_mapping(const DriverApi &driver, unsigned long long addr)
{
    if (!driver.pointer_get_attributes)
        return false;
    int attributes[] = {cuda::pointer_attribute_memory_type,
                        cuda::pointer_attribute_is_legacy_cuda_ipc_capable,
                        cuda::pointer_attribute_mempool_handle, cuda::pointer_attribute_is_managed};
    unsigned int memory_type = 0, legacy_ipc = 0, managed = 0;
    void *pool = nullptr;
    void *data[] = {&memory_type, &legacy_ipc, &pool, &managed};
    return driver.pointer_get_attributes(4, attributes, data, addr) == cuda::success &&
           memory_type == cuda::memorytype_device && !legacy_ipc && !pool && !managed;
}

// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the allocation at addr, which the
// GPUDirect RDMA guide asks for on memory a peer device reads or writes (so
// that CUDA's own copies to it complete before the peer looks). Returns the
// CUresult; success when the driver function is absent (tests).
inline int set_sync_memops(const DriverApi &driver, unsigned long long addr)
{
    // VMM memory has no such attribute (the driver answers
    // CUDA_ERROR_NOT_SUPPORTED; measured on an H100, driver 580); what it
    // needs for RDMA is fixed when it is created. Not asked at all: see
    // is_vmm_mapping().
    if (!driver.pointer_set_attribute || is_vmm_mapping(driver, addr))
        return cuda::success;
    unsigned int one = 1;
    int rc = driver.pointer_set_attribute(&one, cuda::pointer_attribute_sync_memops, addr);
    // A driver without cuPointerGetAttributes' answer: the same rule.
    return rc == cuda::error_not_supported ? cuda::success : rc;
}

// Driver queries the recorder and the cache's wiring need, supplied by the
// hook (real driver functions, never the wrappers) when it starts the
// runtime. Any of them may be null.
struct DriverQueries {
    // Base and size of the allocation containing addr; false if unknown.
    bool (*address_range)(uint64_t addr, uint64_t *base, uint64_t *size) = nullptr;
    // The calling thread's current context and its device.
    uint64_t (*current_context)() = nullptr;
    int32_t (*current_device)() = nullptr;
    // The graph a stream is capturing into (cuStreamGetCaptureInfo); 0 when
    // it is not capturing or the driver cannot say. per_thread: a null
    // stream is the per-thread default stream.
    uint64_t (*capture_graph)(uint64_t stream, bool per_thread) = nullptr;
    // The functions the cache's backends call (cache/base/driver_api.h).
    void (*driver_api)(DriverApi *out) = nullptr;
    // For the log's process line: the driver's version (-1 if unknown), its
    // device count, and a device's name, UUID ("GPU-...") and PCI bus id.
    int (*driver_version)() = nullptr;
    int (*device_count)() = nullptr;
    bool (*device_identity)(int ordinal, char *name, size_t name_size, char *uuid, size_t uuid_size,
                            char *pci_bus_id, size_t pci_size) = nullptr;
};

} // namespace gdrhook
