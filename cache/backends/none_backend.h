// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=none: the cache tracks ranges and answers lookups, but
// nothing is pinned. Used where no GPUDirect path exists, and to measure the
// cache itself.
#pragma once

#include "cache/backends/pin_backend.h"

namespace gdrhook {

class NoneBackend final : public PinBackend {
public:
    BackendKind kind() const override { return BackendKind::none; }
    uint64_t alignment() const override { return 1; }
    Status pin(uint64_t, uint64_t, Pin &) override { return Status::success(); }
    Status unpin(Pin *, size_t) override { return Status::success(); }
};

} // namespace gdrhook
