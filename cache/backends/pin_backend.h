// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How the registration cache pins and unpins: one interface, four
// implementations (none_backend.h, dmabuf_backend.h, kmod_backend.h and, on
// an integrated GPU, pin_user_pages_backend.h); which one a process gets is
// the rule's (backend_rule.h). The cache
// calls pin() on a miss, outside its locks, and unpin() from its reclaimer
// with every retired pin that nobody holds, in one call, so that a backend
// with a batch call (the module's UNPIN_BATCH) makes one system call per
// reclaim. The reclaimer runs on the thread that freed the memory, before
// its free returns (cache/pinning/free_invalidation.h), and on the
// worker after each batch for what a gdrhook_put released since.
#pragma once

#include "cache/backends/backend_kinds.h"
#include "cache/base/owned_fd.h"
#include "cache/base/status.h"
#include "cache/prim/hot_path.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gdrhook {

// One pinned range. Move-only: the fd (dma-buf) or the handle (kmod) is
// released exactly once, by the backend's unpin().
struct Pin {
    OwnedFd fd;          // dma-buf fd, or invalid; the program may close it (owned_fd.h)
    uint64_t handle = 0; // kmod handle, or 0
    // SYNC_MEMOPS left for the first library that asks for the pin
    // (PinBackend::prepare_for_peer): pinned on the shim's own initiative.
    bool peer_setup_deferred = false;
};

// True while this thread pins on the shim's own initiative (an allocation
// pinned under GDRHOOK_PIN=alloc), not for a library that asked: such a pin
// leaves the program's memory as the program set it, SYNC_MEMOPS included,
// and defers that to the first library's get (docs/design.md).
inline GDRHOOK_THREAD_LOCAL bool pinning_on_own_initiative = false;

class PinBackend {
public:
    virtual ~PinBackend() = default;

    virtual BackendKind kind() const = 0;
    // Its kind's word (backend_kinds.h); a test's or a benchmark's stand-in
    // names itself.
    virtual const char *name() const { return to_string(kind()); }

    // What addresses and lengths handed to pin() must be multiples of.
    virtual uint64_t alignment() const = 0;

    // Pins [addr, addr + length). StatusCode::no_space when the device has
    // no room left (the cache then evicts and retries), ::managed for
    // managed memory, ::invalid when the range is not (wholly) allocated.
    virtual Status pin(uint64_t addr, uint64_t length, Pin &out) = 0;

    // What a pin made with peer_setup_deferred still needs before a peer
    // may use the memory at addr (SYNC_MEMOPS): done at a library's first
    // get of it. StatusCode::unsupported during a stream capture, as pin().
    virtual Status prepare_for_peer(uint64_t addr)
    {
        (void)addr;
        return Status::success();
    }

    // Whether pin() can pin page-locked host memory (cuMemHostAlloc,
    // cuMemAllocHost) of `device`'s context.
    virtual bool pins_host_memory(int device) const
    {
        (void)device;
        return false;
    }

    // Whether pin() can pin the program's own memory that it registered
    // with cuMemHostRegister (only by pinning its pages: pin_user_pages).
    virtual bool pins_registered_host_memory() const { return false; }

    // Whether each pin holds a descriptor of the process (a dma-buf fd):
    // the cache then keeps them within a budget (descriptor_budget.h).
    virtual bool pins_hold_descriptors() const { return false; }

    // Releases every pin of the batch, even when some fail; returns the
    // first failure. The pins are left empty.
    virtual Status unpin(Pin *pins, size_t count) = 0;

    // Pins the backend lost without being asked (gdrhook.ko's revocation
    // events: the NVIDIA free callback, a dma-buf move): appends their
    // handles without blocking and returns how many. The worker calls it
    // after every batch; the cache then drops those entries. A pin
    // reported here still needs its unpin() (the module frees the handle
    // then). Backends that cannot lose pins report none.
    virtual size_t take_revocations(std::vector<uint64_t> &handles)
    {
        (void)handles;
        return 0;
    }

    // A descriptor that becomes readable when take_revocations() has
    // something to report, or -1.
    virtual int revocation_fd() const { return -1; }
};

} // namespace gdrhook
