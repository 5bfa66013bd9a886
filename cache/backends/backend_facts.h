// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What decides whether a backend can pin on this machine: what
// /dev/gdrhook said (module_probe.h) and what the GPU says (the driver's
// attributes), and, for each backend, its judgement of them
// (backend_rule.cpp), named by its row (backend_kinds.h). The rule, a
// backend attaching to the module and the doctor all ask the row.
#pragma once

#include "cache/base/status.h"

#include <cerrno>
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

// Whether each backend can pin here, whatever GDRHOOK_BACKEND says:
// success, or why not. none always; dmabuf where the GPU reports
// DMA_BUF_SUPPORTED; kmod where the module answers with our ABI and has
// an nv-p2p provider; pin_user_pages where it answers and pins host pages.
Status none_usable(const ModuleFacts &module, const GpuFacts &gpu);
Status dmabuf_usable(const ModuleFacts &module, const GpuFacts &gpu);
Status kmod_usable(const ModuleFacts &module, const GpuFacts &gpu);
Status pin_user_pages_usable(const ModuleFacts &module, const GpuFacts &gpu);

} // namespace gdrhook
