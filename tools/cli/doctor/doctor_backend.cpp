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
    // The shim's own answer of what can pin (backend_rule.h); dma-buf on
    // every GPU, the module's backends whatever the GPUs are.
    AllowedBackends allowed;
    allowed.kmod = backend_usable(BackendKind::kmod, device.module, {});
    allowed.pin_user_pages = backend_usable(BackendKind::pin_user_pages, device.module, {});
    allowed.dmabuf = cuda.initialised && !cuda.gpus.empty();
    for (const auto &gpu : cuda.gpus)
        allowed.dmabuf = allowed.dmabuf &&
                         backend_usable(BackendKind::dmabuf, device.module, as_the_shim_reads(gpu));
    return allowed;
}

} // namespace gdrhook::cli
