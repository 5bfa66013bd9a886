// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND=kmod: pins through gdrhook.ko's /dev/gdrhook. One object
// owns the open file (handles are per open file, and closing it releases
// every pin), and turns each ioctl of kmod/include/uapi/gdrhook_ioctl.h into
// a typed method returning a Status. While the module is not loaded, open()
// reports StatusCode::no_device and `auto` moves on to dma-buf.
//
// Revocations: the module queues a record for every pin it lost without
// being asked (the NVIDIA free callback). The file is opened O_NONBLOCK so
// that take_revocations() drains them with read() and never waits; the
// backend remembers which handles it holds, so a record for a handle that
// was unpinned meanwhile is ignored, each revoked handle is reported once,
// and an OVERFLOW record (the module's queue was full) is answered by
// QUERYing every handle still held.
//
// Two kinds of PIN go through the same file: GPU memory through the
// NVIDIA driver's nv-p2p (this class) and, on an integrated GPU, the
// program's own pages (pin_user_pages_backend.h), which differ only in
// what they ask the module for.
#pragma once

#include "cache/backends/module_probe.h"
#include "cache/backends/pin_backend.h"
#include "cache/base/driver_api.h"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace gdrhook {

class KmodBackend : public PinBackend {
public:
    KmodBackend() = default;
    // The driver functions pin() uses to set SYNC_MEMOPS; may be empty.
    // `kind`: kmod (GPU memory, nvidia_p2p_get_pages) or pin_user_pages
    // (host pages); its PIN is its row's (backend_kinds.h).
    explicit KmodBackend(const DriverApi &driver, BackendKind kind = BackendKind::kmod)
        : driver_(driver), kind_(kind)
    {}

    // Opens `path` (normally /dev/gdrhook) and checks that the module can
    // pin what this method pins (its row, backend_kinds.h).
    Status open(const std::string &path);
    // The same, with the file the shim's probe opened (module_probe.h).
    Status attach(ModuleProbe probe);

    BackendKind kind() const override { return kind_; }
    // nv-p2p pins whole GPU pages.
    uint64_t alignment() const override { return 64 * 1024; }

    Status pin(uint64_t addr, uint64_t length, Pin &out) override;
    // SYNC_MEMOPS, which a deferred nv-p2p pin left unset.
    Status prepare_for_peer(uint64_t addr) override;
    // GDRHOOK_IOCTL_UNPIN_BATCH, in chunks of the module's batch limit.
    Status unpin(Pin *pins, size_t count) override;

    // Reads the module's revocation records without blocking; appends each
    // revoked handle this backend still holds, once.
    size_t take_revocations(std::vector<uint64_t> &handles) override;
    // The open /dev/gdrhook: poll() says POLLIN when records are queued.
    int revocation_fd() const override { return device_.get(); }

    static const char *default_path();

private:
    // Whether device_ is still our /dev/gdrhook (one fstat: a pin, a
    // batch of unpins, a look for revocations); says once when not.
    bool device_still_ours();
    std::atomic<bool> said_device_closed_{false};

    DriverApi driver_;
    BackendKind kind_ = BackendKind::kmod;
    // Handles this backend has pinned and not yet unpinned -> whether
    // take_revocations() already reported them. Touched by pin() (any
    // thread), unpin() and take_revocations() (the worker).
    std::unordered_map<uint64_t, bool> held_;
    std::mutex held_mutex_;
    // Shared by every pin() from before its PIN ioctl until its handle is
    // in held_; taken exclusively by take_revocations() before it matches
    // records, so that a record read while the PIN that made its handle
    // was still returning is matched after the handle is known, not lost.
    std::shared_mutex pins_in_flight_;

    OwnedFd device_;
    uint32_t batch_max_ = 0;
};

} // namespace gdrhook
