// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's judgement of the backends: the shim's rule
// (cache/backends/backend_rule.h) over the facts the doctor gathered.
#include "doctor/doctor_judge.h"

namespace gdrhook::cli {

namespace {

// The GPU as the shim reads it: an attribute it cannot read is no.
GpuFacts as_the_shim_reads(const CudaFacts::Gpu &gpu)
{
    return {gpu.integrated == 1, gpu.dma_buf == 1};
}

} // namespace

BackendDecision judge_backend(Backend wanted, const GdrhookDeviceFacts &device,
                              const CudaFacts::Gpu &gpu)
{
    return decide_backend(wanted, device.module, as_the_shim_reads(gpu), device.path);
}

AllowedBackends allowed_backends(const GdrhookDeviceFacts &device, const CudaFacts &cuda)
{
    AllowedBackends allowed;
    allowed.kmod = module_pins_gpu_memory(device.module).ok();
    allowed.pin_user_pages = module_pins_host_pages(device.module).ok();
    allowed.dmabuf = cuda.initialised && !cuda.gpus.empty();
    for (const auto &gpu : cuda.gpus)
        allowed.dmabuf = allowed.dmabuf && gpu.dma_buf == 1;
    return allowed;
}

} // namespace gdrhook::cli
