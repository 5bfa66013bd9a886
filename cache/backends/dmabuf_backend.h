// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=dmabuf: a pin is a dma-buf fd exported by the driver with
// cuMemGetHandleForAddressRange (what ibv_reg_dmabuf_mr consumes); the
// unpin is close(). The export keeps the memory allocated until the fd is
// closed (docs/design.md, "dma-buf leak"), which is why the worker closes it as
// soon as the application frees.
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/driver_api.h"

#include <atomic>

namespace gdrhook {

class DmabufBackend final : public PinBackend {
public:
    explicit DmabufBackend(const DriverApi &driver) : driver_(driver) {}

    BackendKind kind() const override { return BackendKind::dmabuf; }
    // dma-buf sub-ranges export at 4 KiB offsets (docs/design.md).
    uint64_t alignment() const override { return 4096; }

    // Refuses managed memory, sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on
    // device memory (the GPUDirect RDMA guide requires it for memory a peer
    // device reads or writes; host memory has no such attribute) unless
    // pinning on the shim's own initiative, then exports the fd.
    Status pin(uint64_t addr, uint64_t length, Pin &out) override;
    // SYNC_MEMOPS, which a deferred pin of device memory left unset.
    Status prepare_for_peer(uint64_t addr) override;

    // Where the device reports CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED
    // (CUDA 13.0): the driver exports page-locked host memory too.
    bool pins_host_memory(int device) const override;

    bool pins_hold_descriptors() const override { return true; }

    // close() of each fd: there is no batch form.
    Status unpin(Pin *pins, size_t count) override;

    // Whether the device reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED.
    static bool device_supports(const DriverApi &driver, int device);

private:
    DriverApi driver_;
    // unpin() runs on several threads at once (reclaimer.h).
    std::atomic<bool> said_closed_by_program_{false};
};

} // namespace gdrhook
