// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's questions to the CUDA driver. cuda.h supplies the types
// only: libcuda.so.1 is opened at run time, never linked.
#include "doctor/machine_facts.h"
#include "doctor/shared_library.h"

#include <cuda.h>

namespace gdrhook::cli {

namespace {

std::string cuda_error(const SharedLibrary &lib, CUresult rc)
{
    auto error_string = lib.function<decltype(&cuGetErrorString)>("cuGetErrorString");
    const char *text = nullptr;
    if (error_string && error_string(rc, &text) == CUDA_SUCCESS && text)
        return std::string(text) + " (" + std::to_string(rc) + ")";
    return "CUresult " + std::to_string(rc);
}

} // namespace

CudaFacts probe_cuda(const std::string &library)
{
    CudaFacts facts;
    SharedLibrary lib;
    if (const Result<void> opened = lib.open(library); !opened) {
        facts.error = opened.why();
        return facts;
    }
    facts.loaded = true;
    facts.path = lib.path("cuInit");

    // Exact exported names: cuda.h maps some of them to _v2 by macro, and
    // these are the ABI the driver has exported since CUDA 4.
    auto init = lib.function<decltype(&cuInit)>("cuInit");
    auto driver_version = lib.function<decltype(&cuDriverGetVersion)>("cuDriverGetVersion");
    auto device_count = lib.function<decltype(&cuDeviceGetCount)>("cuDeviceGetCount");
    auto device_get = lib.function<decltype(&cuDeviceGet)>("cuDeviceGet");
    auto device_name = lib.function<decltype(&cuDeviceGetName)>("cuDeviceGetName");
    auto attribute = lib.function<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
    auto bus_id = lib.function<decltype(&cuDeviceGetPCIBusId)>("cuDeviceGetPCIBusId");
    if (!init || !device_count || !device_get) {
        facts.error = "it lacks cuInit, cuDeviceGetCount or cuDeviceGet: not a CUDA driver";
        return facts;
    }
    if (driver_version)
        driver_version(&facts.driver_version);
    CUresult rc = init(0);
    if (rc != CUDA_SUCCESS) {
        facts.error = "cuInit failed: " + cuda_error(lib, rc);
        return facts;
    }
    facts.initialised = true;

    int count = 0;
    rc = device_count(&count);
    if (rc != CUDA_SUCCESS) {
        facts.error = "cuDeviceGetCount failed: " + cuda_error(lib, rc);
        return facts;
    }
    for (int i = 0; i < count; ++i) {
        CudaFacts::Gpu gpu;
        gpu.ordinal = i;
        CUdevice device = 0;
        if (device_get(&device, i) != CUDA_SUCCESS)
            continue;
        char text[256] = {};
        if (device_name && device_name(text, sizeof text, device) == CUDA_SUCCESS)
            gpu.name = text;
        if (bus_id && bus_id(text, sizeof text, device) == CUDA_SUCCESS)
            gpu.pci_bus_id = text;
        int value = 0;
        if (attribute &&
            attribute(&value, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device) == CUDA_SUCCESS)
            gpu.dma_buf = value;
        if (attribute && attribute(&value, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, device) ==
                             CUDA_SUCCESS)
            gpu.gpudirect_rdma = value;
        if (attribute && attribute(&value, CU_DEVICE_ATTRIBUTE_INTEGRATED, device) == CUDA_SUCCESS)
            gpu.integrated = value;
        facts.gpus.push_back(gpu);
    }
    return facts;
}

} // namespace gdrhook::cli
