// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/select_backend.h"

#include "cache/backends/dmabuf_backend.h"
#include "cache/backends/kmod_backend.h"
#include "cache/backends/none_backend.h"
#include "cache/backends/pin_user_pages_backend.h"

namespace gdrhook {

GpuFacts gpu_facts(const DriverApi &driver, int device)
{
    return {PinUserPagesBackend::device_is_integrated(driver, device),
            DmabufBackend::device_supports(driver, device)};
}

Status select_backend(Backend wanted, const DriverApi &driver, int device,
                      const std::string &kmod_path, BackendChoice &out)
{
    // The module is asked only when its answer can matter.
    ModuleProbe probe;
    if (wanted != Backend::none && wanted != Backend::dmabuf)
        probe = probe_module(kmod_path);
    return select_backend_from(wanted, std::move(probe), gpu_facts(driver, device), driver,
                               kmod_path, out);
}

Status select_backend_from(Backend wanted, ModuleProbe probe, const GpuFacts &gpu,
                           const DriverApi &driver, const std::string &kmod_path,
                           BackendChoice &out)
{
    out.decision = decide_backend(wanted, probe.facts, gpu, kmod_path);
    out.reason = out.decision.reason;
    out.backend.reset();
    Status status = out.decision.request_failed;
    std::unique_ptr<KmodBackend> module;
    switch (out.decision.kind) {
    case BackendKind::none: out.backend = std::make_unique<NoneBackend>(); return status;
    case BackendKind::dmabuf: out.backend = std::make_unique<DmabufBackend>(driver); return status;
    case BackendKind::kmod: module = std::make_unique<KmodBackend>(driver); break;
    case BackendKind::pin_user_pages: module = std::make_unique<PinUserPagesBackend>(driver); break;
    }
    status = module->attach(std::move(probe));
    if (!status.ok()) { // the rule was handed facts this file does not bear out
        out.backend = std::make_unique<NoneBackend>();
        out.reason += std::string(", but ") + status.what + "; nothing is pinned";
        return status;
    }
    out.backend = std::move(module);
    return status;
}

} // namespace gdrhook
