// SPDX-License-Identifier: MIT OR GPL-2.0-only
// The doctor's judgement of the backends: the shim's rule and each
// backend's row (cache/backends/backend_rule.h, backend_kinds.h) over
// the facts the doctor gathered.
#include "doctor/doctor_judge.h"

#include <vector>

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
    std::vector<GpuFacts> gpus;
    if (cuda.initialised)
        for (const auto &gpu : cuda.gpus)
            gpus.push_back(as_the_shim_reads(gpu));
    if (gpus.empty())
        gpus.emplace_back(); // what the shim reads of a GPU that says nothing
    // Each backend's own row answers, as it does for the shim.
    AllowedBackends allowed;
    for (const BackendRow &row : backend_rows) {
        bool everywhere = true;
        for (const GpuFacts &gpu : gpus)
            everywhere = everywhere && row.usable(device.module, gpu).ok();
        allowed.usable[static_cast<size_t>(row.kind)] = everywhere;
    }
    return allowed;
}

} // namespace gdrhook::cli
