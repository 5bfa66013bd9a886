// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=pin_user_pages: on an integrated GPU (Jetson Orin,
// Thor: CU_DEVICE_ATTRIBUTE_INTEGRATED) the memory a NIC reaches is host
// memory, cuMemHostAlloc/cudaHostAlloc/cuMemHostRegister pages of the
// process, and the way to pin it is pin_user_pages(FOLL_LONGTERM), which
// gdrhook.ko does for GDRHOOK_BACKEND_HOST_PAGES (kmod/host_pages.c). The
// module revokes such a pin when the memory goes away some other way
// (munmap, the process's end): the revocation records of the kmod backend.
#pragma once

#include "cache/backends/kmod_backend.h"

namespace gdrhook {

class PinUserPagesBackend final : public KmodBackend {
public:
    explicit PinUserPagesBackend(const DriverApi &driver)
        : KmodBackend(driver, BackendKind::pin_user_pages)
    {}

    // The kernel pins whole pages of the process.
    uint64_t alignment() const override;
    bool pins_host_memory(int) const override { return true; }
    bool pins_registered_host_memory() const override { return true; }

    // CU_DEVICE_ATTRIBUTE_INTEGRATED: the GPU shares the host's memory.
    static bool device_is_integrated(const DriverApi &driver, int device);
};

} // namespace gdrhook
