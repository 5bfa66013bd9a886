// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/select_backend.h"

#include "cache/backends/dmabuf_backend.h"
#include "cache/backends/kmod_backend.h"
#include "cache/backends/none_backend.h"
#include "cache/backends/pin_user_pages_backend.h"

namespace gdrhook {

const char *to_string(BackendKind kind)
{
    switch (kind) {
    case BackendKind::none: return "none";
    case BackendKind::dmabuf: return "dmabuf";
    case BackendKind::kmod: return "kmod";
    case BackendKind::pin_user_pages: return "pin_user_pages";
    }
    return "?";
}

const char *to_string(StatusCode code)
{
    switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::no_device: return "no_device";
    case StatusCode::no_space: return "no_space";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::managed: return "managed";
    case StatusCode::invalid: return "invalid";
    case StatusCode::driver_error: return "driver_error";
    case StatusCode::io_error: return "io_error";
    case StatusCode::not_found: return "not_found";
    case StatusCode::no_descriptors: return "no_descriptors";
    }
    return "?";
}

namespace {

// pin_user_pages, asked for or where `auto` finds an integrated GPU:
// Status::success() with the backend chosen, else why not (out untouched).
Status choose_pin_user_pages(const DriverApi &driver, const std::string &kmod_path,
                             BackendChoice &out)
{
    auto pages = std::make_unique<PinUserPagesBackend>(driver);
    Status status = pages->open(kmod_path);
    if (!status.ok())
        return status;
    out.backend = std::move(pages);
    out.reason = "gdrhook.ko pins host pages at " + kmod_path;
    return status;
}

} // namespace

Status select_backend(Backend wanted, const DriverApi &driver, int device,
                      const std::string &kmod_path, BackendChoice &out)
{
    out.backend.reset();
    if (wanted == Backend::none) {
        out.backend = std::make_unique<NoneBackend>();
        out.reason = "GDRHOOK_BACKEND=none";
        return Status::success();
    }

    if (wanted == Backend::pin_user_pages) {
        Status status = choose_pin_user_pages(driver, kmod_path, out);
        if (!status.ok()) {
            out.backend = std::make_unique<NoneBackend>();
            out.reason = std::string("GDRHOOK_BACKEND=pin_user_pages but ") + status.what +
                         "; nothing is pinned";
        }
        return status;
    }
    // An integrated GPU's RDMA memory is host memory: nv-p2p has none to
    // pin there (and is gone on Thor); the module pins the pages instead.
    std::string integrated_why;
    if (wanted == Backend::auto_select &&
        PinUserPagesBackend::device_is_integrated(driver, device)) {
        Status status = choose_pin_user_pages(driver, kmod_path, out);
        if (status.ok()) {
            out.reason = "the GPU is integrated (CU_DEVICE_ATTRIBUTE_INTEGRATED) and " + out.reason;
            return status;
        }
        integrated_why = std::string("the GPU is integrated but ") + status.what + "; ";
    }

    Status kmod_status;
    if (wanted == Backend::kmod || wanted == Backend::auto_select) {
        auto kmod = std::make_unique<KmodBackend>(driver);
        kmod_status = kmod->open(kmod_path);
        if (kmod_status.ok()) {
            out.backend = std::move(kmod);
            out.reason = "gdrhook.ko answers at " + kmod_path;
            return Status::success();
        }
        if (wanted == Backend::kmod) {
            out.backend = std::make_unique<NoneBackend>();
            out.reason =
                std::string("GDRHOOK_BACKEND=kmod but ") + kmod_status.what + "; nothing is pinned";
            return kmod_status;
        }
    }

    bool dmabuf = DmabufBackend::device_supports(driver, device);
    if (dmabuf || wanted == Backend::dmabuf) {
        out.backend = std::make_unique<DmabufBackend>(driver);
        out.reason = dmabuf ? "device reports DMA_BUF_SUPPORTED"
                            : "GDRHOOK_BACKEND=dmabuf (device does not report "
                              "DMA_BUF_SUPPORTED; pins may fail)";
        if (wanted == Backend::auto_select)
            out.reason = integrated_why + kmod_status.what + "; " + out.reason;
        return Status::success();
    }

    out.backend = std::make_unique<NoneBackend>();
    out.reason = integrated_why + kmod_status.what +
                 "; device does not report DMA_BUF_SUPPORTED: nothing is pinned";
    return Status::success();
}

} // namespace gdrhook
