// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=auto|kmod|dmabuf|pin_user_pages|none made into a backend
// object: `auto` takes pin_user_pages when the GPU is integrated
// (CU_DEVICE_ATTRIBUTE_INTEGRATED) and /dev/gdrhook pins host pages, else
// kmod when /dev/gdrhook answers with an nv-p2p provider, else dmabuf when
// the device reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, else none, and
// says why in `reason` for the log.
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/config.h"
#include "cache/base/driver_api.h"

#include <memory>
#include <string>

namespace gdrhook {

struct BackendChoice {
    std::unique_ptr<PinBackend> backend; // never null: `none` at worst
    std::string reason;
};

// An explicitly requested backend that cannot work gives a failed Status
// and the `none` backend (the program still runs, nothing is pinned).
Status select_backend(Backend wanted, const DriverApi &driver, int device,
                      const std::string &kmod_path, BackendChoice &out);

} // namespace gdrhook
