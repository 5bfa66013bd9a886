// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/backend_rule.h"

namespace gdrhook {
namespace {

// Whether /dev/gdrhook opened, answered GET_VERSION and speaks our ABI.
Status module_answers(const ModuleFacts &module)
{
    const int error = module.open_errno;
    if (!module.refused.empty())
        return Status::error(StatusCode::no_device, error,
                             "/dev/gdrhook is not a character device owned by root");
    if (error == ENOENT || error == ENXIO || error == ENODEV)
        return Status::error(StatusCode::no_device, error,
                             "/dev/gdrhook is absent (gdrhook.ko not loaded)");
    if (error != 0)
        return Status::error(StatusCode::io_error, error, "cannot open /dev/gdrhook");
    if (!module.answers_version)
        return Status::error(StatusCode::no_device, module.version_errno,
                             "/dev/gdrhook does not answer GET_VERSION");
    if (!module.abi_fits)
        return Status::error(StatusCode::unsupported, static_cast<int>(module.abi_major),
                             "gdrhook.ko speaks another ABI major version");
    return Status::success();
}

// The backend asked for by name cannot work: nothing is pinned, and the
// caller is told.
BackendDecision refused(BackendKind wanted, const Status &why)
{
    return {BackendKind::none, why,
            std::string("GDRHOOK_BACKEND=") + to_string(wanted) + " but " + why.what +
                "; nothing is pinned"};
}

Status usable(BackendKind kind, const ModuleFacts &module, const GpuFacts &gpu)
{
    return backend_row(kind).usable(module, gpu);
}

} // namespace

Status none_usable(const ModuleFacts &, const GpuFacts &)
{
    return Status::success();
}

Status dmabuf_usable(const ModuleFacts &, const GpuFacts &gpu)
{
    if (!gpu.dma_buf)
        return Status::error(StatusCode::unsupported, 0,
                             "device does not report DMA_BUF_SUPPORTED");
    return Status::success();
}

Status kmod_usable(const ModuleFacts &module, const GpuFacts &)
{
    Status status = module_answers(module);
    if (status.ok() && !module.nvp2p)
        return Status::error(StatusCode::no_device, 0, "gdrhook.ko found no nvidia_p2p_* provider");
    return status;
}

Status pin_user_pages_usable(const ModuleFacts &module, const GpuFacts &)
{
    Status status = module_answers(module);
    if (status.ok() && !module.host_pages)
        return Status::error(StatusCode::unsupported, 0,
                             "gdrhook.ko cannot pin host pages (older than ABI 1.1, or a "
                             "kernel without MMU notifiers)");
    return status;
}

bool backend_usable(BackendKind kind, const ModuleFacts &module, const GpuFacts &gpu)
{
    return usable(kind, module, gpu).ok();
}

BackendDecision decide_backend(Backend wanted, const ModuleFacts &module, const GpuFacts &gpu,
                               const std::string &module_path)
{
    if (wanted == Backend::none)
        return {BackendKind::none, {}, "GDRHOOK_BACKEND=none"};

    const std::string pins_host_pages = "gdrhook.ko pins host pages at " + module_path;
    if (wanted == Backend::pin_user_pages) {
        Status status = usable(BackendKind::pin_user_pages, module, gpu);
        if (!status.ok())
            return refused(BackendKind::pin_user_pages, status);
        return {BackendKind::pin_user_pages, {}, pins_host_pages};
    }
    // An integrated GPU's RDMA memory is host memory: nv-p2p has none to
    // pin there (and is gone on Thor); the module pins the pages instead.
    std::string integrated_why;
    if (wanted == Backend::auto_select && gpu.integrated) {
        Status status = usable(BackendKind::pin_user_pages, module, gpu);
        if (status.ok())
            return {BackendKind::pin_user_pages,
                    {},
                    "the GPU is integrated (CU_DEVICE_ATTRIBUTE_INTEGRATED) and " +
                        pins_host_pages};
        integrated_why = std::string("the GPU is integrated but ") + status.what + "; ";
    }

    Status kmod = usable(BackendKind::kmod, module, gpu);
    if (wanted == Backend::kmod || wanted == Backend::auto_select) {
        if (kmod.ok())
            return {BackendKind::kmod, {}, "gdrhook.ko answers at " + module_path};
        if (wanted == Backend::kmod)
            return refused(BackendKind::kmod, kmod);
    }

    if (wanted == Backend::dmabuf)
        return {BackendKind::dmabuf,
                {},
                gpu.dma_buf ? "device reports DMA_BUF_SUPPORTED"
                            : "GDRHOOK_BACKEND=dmabuf (device does not report "
                              "DMA_BUF_SUPPORTED; pins may fail)"};
    const std::string not_module = integrated_why + kmod.what + "; ";
    Status dmabuf = usable(BackendKind::dmabuf, module, gpu);
    if (dmabuf.ok())
        return {BackendKind::dmabuf, {}, not_module + "device reports DMA_BUF_SUPPORTED"};
    return {BackendKind::none, {}, not_module + dmabuf.what + ": nothing is pinned"};
}

} // namespace gdrhook
