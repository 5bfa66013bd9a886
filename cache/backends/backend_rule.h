// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one rule that turns GDRHOOK_BACKEND into a backend, from facts
// gathered elsewhere (backend_facts.h: module_probe.h for /dev/gdrhook,
// the driver's attributes for the GPU), each backend's usability judged by
// its row (backend_kinds.h). No I/O: the shim
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

#include <string>

namespace gdrhook {

struct BackendDecision {
    BackendKind kind = BackendKind::none;
    // Not ok only when the backend asked for by name cannot work (kind is
    // then none): the shim logs it as an error.
    Status request_failed;
    std::string reason; // for the log and the doctor
};

// Whether `kind` can pin on this machine, whatever GDRHOOK_BACKEND says:
// its row's judgement (backend_facts.h). `auto` takes the first usable
// one of its order (above); the doctor lists them all.
bool backend_usable(BackendKind kind, const ModuleFacts &module, const GpuFacts &gpu);

// `module_path` only names the device in the reason.
BackendDecision decide_backend(Backend wanted, const ModuleFacts &module, const GpuFacts &gpu,
                               const std::string &module_path);

} // namespace gdrhook
