// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one rule that turns GDRHOOK_BACKEND=auto|kmod|dmabuf|pin_user_pages|
// none into a backend, from facts gathered elsewhere (module_probe.h for
// /dev/gdrhook, the driver's attributes for the GPU). No I/O: the shim
// (select_backend.cpp) and `gdrhook doctor` both call it, so what the
// doctor says `auto` picks is what the shim picks.
//
// `auto` takes pin_user_pages when the GPU is integrated and the module
// pins host pages, else kmod when the module has an nv-p2p provider, else
// dmabuf when the GPU reports DMA_BUF_SUPPORTED, else none.
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/config.h"
#include "cache/base/status.h"

#include <cstdint>
#include <string>

namespace gdrhook {

// What /dev/gdrhook said when asked (module_probe.h).
struct ModuleFacts {
    int open_errno = ENOENT;      // 0: opened; ENOENT, ENXIO, ENODEV: absent
    std::string refused;          // opened, but not the device (safe_file.h's why)
    bool answers_version = false; // GDRHOOK_IOCTL_GET_VERSION succeeded
    int version_errno = 0;        // why not
    uint32_t abi_major = 0, abi_minor = 0;
    bool abi_fits = false;   // abi_major is the one this build speaks
    uint32_t features = 0;   // GDRHOOK_FEATURE_*, for the doctor's words
    bool nvp2p = false;      // GDRHOOK_FEATURE_NVP2P: it pins GPU memory
    bool host_pages = false; // GDRHOOK_FEATURE_HOST_PAGES: it pins host pages
    uint32_t unpin_batch_max = 0;
    uint64_t max_handles = 0, max_pinned_bytes = 0;
};

// What the GPU the shim pins for says (CU_DEVICE_ATTRIBUTE_*; unknown is no).
struct GpuFacts {
    bool integrated = false; // INTEGRATED: its memory is host memory
    bool dma_buf = false;    // DMA_BUF_SUPPORTED
};

struct BackendDecision {
    BackendKind kind = BackendKind::none;
    // Not ok only when the backend asked for by name cannot work (kind is
    // then none): the shim logs it as an error.
    Status request_failed;
    std::string reason; // for the log and the doctor
};

// Whether the module, as described, can pin GPU memory through nv-p2p
// (kmod) or host pages (pin_user_pages): success, or why not.
Status module_pins_gpu_memory(const ModuleFacts &module);
Status module_pins_host_pages(const ModuleFacts &module);

// Whether `kind` can pin on this machine, whatever GDRHOOK_BACKEND says:
// kmod and pin_user_pages where the module does (the two above), dmabuf
// where the GPU reports DMA_BUF_SUPPORTED, none always. `auto` takes the
// first usable one of its order (below); the doctor lists them all.
bool backend_usable(BackendKind kind, const ModuleFacts &module, const GpuFacts &gpu);

// `module_path` only names the device in the reason.
BackendDecision decide_backend(Backend wanted, const ModuleFacts &module, const GpuFacts &gpu,
                               const std::string &module_path);

} // namespace gdrhook
