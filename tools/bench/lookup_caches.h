// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The caches the lookup benchmark compares, behind one interface: a hit of
// each, as a communication library would do it per message.
//   gdrhook.lookup   RegistrationCache::lookup (no hold)
//   gdrhook.get_put  RegistrationCache::get + put (a hold, like rcache's)
//   tagcheck         the same immutable index plus the buffer-ID driver
//                    call on every hit (what libfabric and Open MPI do)
//   ucs_rcache       UCX's ucs_rcache_get + ucs_rcache_region_put
//   query            the tag check's cuPointerGetAttribute(BUFFER_ID) alone
//                    (under the shim: answered from its table)
#pragma once

#include "cache/base/result.h"
#include "cache/prim/hot_path.h"
#include "cache/registration/registration_cache.h"
#include "cuda_loader.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

struct Buffer {
    uint64_t addr;
    uint64_t size;
    uint64_t buffer_id; // from the driver, for the tag check
};

class LookupCache {
public:
    virtual ~LookupCache() = default;
    virtual const char *name() const = 0;
    // Called once per buffer before measuring (the misses).
    virtual bool warm(const Buffer &buffer) = 0;
    // count hits of len bytes at addrs[0..count), in order, as one call:
    // the loop is compiled into each cache (no virtual call a hit), so a
    // batch is timed with one pair of clock reads and what is measured is
    // the caches' own work. Returns how many failed; `sink` accumulates
    // something derived from each registration so the compiler keeps the work.
    virtual uint64_t hit_batch(const uint64_t *addrs, size_t count, uint64_t len,
                               uint64_t &sink) = 0;
};

// Implements hit_batch over Self::hit(addr, len) (0: failed), inlined.
template <typename Self> class BatchedCache : public LookupCache {
public:
    uint64_t hit_batch(const uint64_t *addrs, size_t count, uint64_t len, uint64_t &sink) final
    {
        // Few registers live across a miss's call, or the compiler keeps
        // `acc` on the stack and every hit pays a load and a store of it
        // (a dependency from one hit to the next): a pointer and its end
        // rather than an index and a count, and failures, which are rare,
        // counted in memory.
        const uint64_t failed_before = failed_;
        uint64_t acc = 0;
        for (const uint64_t *end = addrs + count; addrs != end; ++addrs) {
            uint64_t got = static_cast<Self *>(this)->hit(*addrs, len);
            if (GDRHOOK_UNLIKELY(got == 0))
                ++failed_;
            acc += got;
        }
        sink += acc;
        return failed_ - failed_before;
    }

private:
    uint64_t failed_ = 0;
};

std::unique_ptr<LookupCache> make_gdrhook_cache(const std::vector<Buffer> &buffers, bool hold);
std::unique_ptr<LookupCache> make_tagcheck_cache(const Cuda &cuda);
std::unique_ptr<LookupCache> make_pointer_query(const Cuda &cuda);
// UCX's rcache; why() says why not (UCX not found at build time, or its
// rcache refused).
gdrhook::Result<std::unique_ptr<LookupCache>> make_ucx_cache();

} // namespace bench
