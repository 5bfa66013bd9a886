// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The caches the lookup benchmark compares, behind one interface: a hit of
// each, as a communication library would do it per message.
//   gdrhook.lookup   RegistrationCache::lookup (no hold)
//   gdrhook.get_put  RegistrationCache::get + put (a hold, like rcache's)
//   tagcheck         the same immutable index plus the buffer-ID driver
//                    call on every hit (what libfabric and Open MPI do)
//   ucs_rcache       UCX's ucs_rcache_get + ucs_rcache_region_put
#pragma once

#include "cache/registration_cache.h"
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

class LookupCache
{
public:
    virtual ~LookupCache() = default;
    virtual const char *name() const = 0;
    // Called once per buffer before measuring (the misses).
    virtual bool warm(const Buffer &buffer) = 0;
    // One hit; returns something derived from the registration so the
    // compiler keeps the work.
    virtual uint64_t hit(uint64_t addr, uint64_t len) = 0;
};

std::unique_ptr<LookupCache> make_gdrhook_cache(const std::vector<Buffer> &buffers, bool hold);
std::unique_ptr<LookupCache> make_tagcheck_cache(const Cuda &cuda);
// Null when UCX was not found at build time; `why` says so.
std::unique_ptr<LookupCache> make_ucx_cache(std::string &why);

} // namespace bench
