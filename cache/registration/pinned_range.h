// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A registration's values, declared once: the pinned range and what a hit
// hands out for it. The cache entry, the page hash and each thread's hit
// cache keep one of these; Registration is the form lookup() returns.
#pragma once

#include <cstdint>

namespace gdrhook {

struct PinnedRange {
    uint64_t start = 0, end = 0; // the pinned range [start, end)
    uint64_t id = 0;             // the cache entry's id, unique in the cache
    uint64_t buffer_id = 0;      // CU_POINTER_ATTRIBUTE_BUFFER_ID at pin time, 0 if unknown
    uint64_t handle = 0;         // kmod handle (kmod backend), else 0
    int32_t fd = -1;             // dma-buf fd (dmabuf backend), else -1
    // Pinned on the shim's own initiative (Pin::peer_setup_deferred): a
    // library's get still owes it SYNC_MEMOPS, once
    // (RegistrationCache::prepare_for_peer). In fd's padding, as below.
    bool peer_setup_deferred = false;
};

// The registration a lookup returns, by value: valid until the memory is
// freed (lookup) or until put() (get).
struct Registration {
    uint64_t base = 0; // the pinned range
    uint64_t length = 0;
    int32_t fd = -1;                  // dma-buf fd (dmabuf backend), else -1
    bool peer_setup_deferred = false; // PinnedRange's
    uint64_t handle = 0;              // kmod handle (kmod backend), else 0
    uint64_t id = 0;                  // the cache entry's id, unique in the cache
    uint64_t buffer_id = 0;           // CU_POINTER_ATTRIBUTE_BUFFER_ID at pin time, 0 if unknown

    uint64_t offset_of(uint64_t addr) const { return addr - base; }

    static Registration of(const PinnedRange &range)
    {
        Registration reg;
        reg.base = range.start;
        reg.length = range.end - range.start;
        reg.fd = range.fd;
        reg.handle = range.handle;
        reg.id = range.id;
        reg.buffer_id = range.buffer_id;
        reg.peer_setup_deferred = range.peer_setup_deferred;
        return reg;
    }
};

} // namespace gdrhook
