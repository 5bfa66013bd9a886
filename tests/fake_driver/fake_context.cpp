// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Initialization, devices and contexts of the fake driver. Destroying a
// context (or resetting a primary one) frees everything allocated in it,
// as the real driver does.
#include "fake_state.h"

#include <cstring>

using namespace fake;

namespace {

constexpr int device_count = 2;

void free_context_allocations(Context *context)
{
    Driver &d = driver();
    std::vector<uintptr_t> doomed;
    for (auto &entry : d.live)
        if (entry.second.context == context && !entry.second.host)
            doomed.push_back(entry.first);
    for (uintptr_t addr : doomed)
        release_block(addr);
}

} // namespace

extern "C" {

CUresult cuInit(unsigned int)
{
    if (CUresult injected = count_call("cuInit"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().initialized = true;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = device_count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!device || ordinal < 0 || ordinal >= device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!name || length <= 0 || device < 0 || device >= device_count)
        return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "gdrhook fake GPU", static_cast<size_t>(length) - 1);
    name[length - 1] = '\0';
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!value || device < 0 || device >= device_count)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: *value = 1; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:
        *value = host_dmabuf_supported();
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = integrated(); return CUDA_SUCCESS;
    default: *value = 0; return CUDA_SUCCESS;
    }
}

static CUresult create_context(const char *name, CUcontext *pctx, CUdevice device)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!pctx || device < 0 || device >= device_count)
        return CUDA_ERROR_INVALID_VALUE;
    auto *context = new Context{device, false};
    current_context = context;
    *pctx = reinterpret_cast<CUcontext>(context);
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int, CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return create_context("cuCtxCreate_v2", pctx, device);
}

#if CUDA_VERSION >= 12050
// What cuCtxCreate names from CUDA 12.5's headers on (the parameters, for
// execution affinity and CIG, are ignored).
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *, unsigned int, CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return create_context("cuCtxCreate_v4", pctx, device);
}
#endif

static CUresult destroy_context(const char *name, CUcontext ctx)
{
    if (CUresult injected = count_call(name))
        return injected;
    auto *context = reinterpret_cast<Context *>(ctx);
    if (!context || context->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    {
        std::lock_guard<std::mutex> lock(driver().mutex);
        free_context_allocations(context);
    }
    if (current_context == context)
        current_context = nullptr;
    delete context;
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    return destroy_context("cuCtxDestroy", ctx);
}
CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return destroy_context("cuCtxDestroy_v2", ctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    current_context = reinterpret_cast<Context *>(ctx);
    return CUDA_SUCCESS;
}

// The thread's stack of contexts under the current one.
thread_local std::vector<Context *> pushed_contexts;

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    pushed_contexts.push_back(current_context);
    current_context = reinterpret_cast<Context *>(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!current_context)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx)
        *pctx = reinterpret_cast<CUcontext>(current_context);
    current_context = pushed_contexts.empty() ? nullptr : pushed_contexts.back();
    if (!pushed_contexts.empty())
        pushed_contexts.pop_back();
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = reinterpret_cast<CUcontext>(current_context);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!current_context)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = current_context->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    if (CUresult injected = count_call("cuCtxSynchronize"))
        return injected;
    if (capture_prohibits_unsafe_call())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    std::lock_guard<std::mutex> lock(driver().mutex);
    for (auto &entry : driver().live)
        entry.second.pending = false;
    complete_stream_frees(nullptr, true);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice device)
{
    if (CUresult injected = count_call("cuDevicePrimaryCtxRetain"))
        return injected;
    if (!pctx || device < 0 || device >= device_count)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    Context *&primary = driver().primary[device];
    if (!primary)
        primary = new Context{device, true};
    ++driver().primary_refs[device];
    *pctx = reinterpret_cast<CUcontext>(primary);
    return CUDA_SUCCESS;
}

static CUresult primary_release(const char *name, CUdevice device)
{
    if (CUresult injected = count_call(name))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    auto it = driver().primary.find(device);
    if (it == driver().primary.end() || driver().primary_refs[device] <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--driver().primary_refs[device] == 0)
        free_context_allocations(it->second); // the last release destroys it
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return primary_release("cuDevicePrimaryCtxRelease", device);
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return primary_release("cuDevicePrimaryCtxRelease_v2", device);
}

static CUresult primary_reset(const char *name, CUdevice device)
{
    if (CUresult injected = count_call(name))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    auto it = driver().primary.find(device);
    if (it != driver().primary.end())
        free_context_allocations(it->second);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return primary_reset("cuDevicePrimaryCtxReset", device);
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice device)
{
    if (CUresult refused = refused_after_fork())
        return refused;
    return primary_reset("cuDevicePrimaryCtxReset_v2", device);
}

CUresult cuGetErrorString(CUresult error, const char **text)
{
    if (!text)
        return CUDA_ERROR_INVALID_VALUE;
    *text = error == CUDA_SUCCESS ? "no error" : "fake driver error";
    return CUDA_SUCCESS;
}

} // extern "C"
