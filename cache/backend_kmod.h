// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=kmod: pins through gdrhook.ko's /dev/gdrhook. One object
// owns the open file (handles are per open file, and closing it releases
// every pin), and turns each ioctl of kmod/include/uapi/gdrhook_ioctl.h into
// a typed method returning a Status. While the module is not loaded, open()
// reports StatusCode::no_device and `auto` moves on to dma-buf.
#pragma once

#include "cache/pin_backend.h"

#include <string>

namespace gdrhook {

class KmodBackend final : public PinBackend
{
public:
    // Opens `path` (normally /dev/gdrhook) and checks the ABI version.
    Status open(const std::string &path);

    BackendKind kind() const override { return BackendKind::kmod; }
    const char *name() const override { return "kmod"; }
    // nv-p2p pins whole GPU pages.
    uint64_t alignment() const override { return 64 * 1024; }

    Status pin(uint64_t addr, uint64_t length, Pin &out) override;
    // GDRHOOK_IOCTL_UNPIN_BATCH, in chunks of the module's batch limit.
    Status unpin(Pin *pins, size_t count) override;

    static const char *default_path();

private:
    UniqueFd device_;
    uint32_t batch_max_ = 0;
};

} // namespace gdrhook
