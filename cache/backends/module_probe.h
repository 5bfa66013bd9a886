// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one question put to /dev/gdrhook before a backend is chosen: can it
// be opened, does it answer GDRHOOK_IOCTL_GET_VERSION, with which ABI and
// features. The shim asks it once and hands the open file to the backend
// it picks (kmod_backend.h); `gdrhook doctor` and `gdrhook node` ask the
// same, so the facts they judge are the facts the shim judges
// (backend_rule.h).
#pragma once

#include "cache/backends/backend_rule.h"
#include "cache/base/unique_fd.h"

#include <string>

namespace gdrhook {

struct ModuleProbe {
    ModuleFacts facts;
    UniqueFd device; // open (O_RDWR, O_NONBLOCK) when facts.open_errno is 0
};

ModuleProbe probe_module(const std::string &path);

} // namespace gdrhook
