// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// UCX's registration cache (Debian libucx-dev), driven through its public
// header only: regions registered with a no-op mem_reg, no UCM memory
// events (the benchmark measures the lookup, not UCX's hooks), no PFN
// check. Built only when meson finds ucx.
#include "lookup_caches.h"

#include <climits>
#include <cstdint>
#include <sys/mman.h>

extern "C" {
#include <ucs/memory/rcache.h>
}

namespace bench {
namespace {

ucs_status_t no_register(void *, ucs_rcache_t *, void *, ucs_rcache_region_t *, uint16_t)
{
    return UCS_OK;
}
void no_deregister(void *, ucs_rcache_t *, ucs_rcache_region_t *) {}
void no_dump(void *, ucs_rcache_t *, ucs_rcache_region_t *, char *buf, size_t max)
{
    if (max)
        buf[0] = '\0';
}

const ucs_rcache_ops_t ops = {no_register, no_deregister, no_dump};

class UcxCache final : public BatchedCache<UcxCache> {
public:
    explicit UcxCache(ucs_rcache_t *rcache) : rcache_(rcache) {}
    ~UcxCache() override { ucs_rcache_destroy(rcache_); }
    const char *name() const override { return "ucs_rcache"; }
    bool warm(const Buffer &buffer) override
    {
        ucs_rcache_region_t *region = nullptr;
        if (ucs_rcache_get(rcache_, reinterpret_cast<void *>(buffer.addr), buffer.size,
                           PROT_READ | PROT_WRITE, nullptr, &region) != UCS_OK)
            return false;
        ucs_rcache_region_put(rcache_, region); // stays cached (in the page table)
        return true;
    }
    uint64_t hit(uint64_t addr, uint64_t len)
    {
        ucs_rcache_region_t *region = nullptr;
        if (ucs_rcache_get(rcache_, reinterpret_cast<void *>(addr), len, PROT_READ | PROT_WRITE,
                           nullptr, &region) != UCS_OK)
            return 0;
        uint64_t start = region->super.start;
        ucs_rcache_region_put(rcache_, region);
        return start;
    }

private:
    ucs_rcache_t *rcache_;
};

} // namespace

gdrhook::Result<std::unique_ptr<LookupCache>> make_ucx_cache()
{
    ucs_rcache_params_t params = {};
    params.region_struct_size = sizeof(ucs_rcache_region_t);
    params.alignment = UCS_PGT_ADDR_ALIGN;
    params.max_alignment = 4096;
    params.ucm_events = 0;
    params.ucm_event_priority = 0;
    params.ops = &ops;
    params.context = nullptr;
    params.flags = UCS_RCACHE_FLAG_NO_PFN_CHECK;
    params.max_regions = ULONG_MAX;
    params.max_size = SIZE_MAX;
    params.max_unreleased = SIZE_MAX;
    ucs_rcache_t *rcache = nullptr;
    ucs_status_t status = ucs_rcache_create(&params, "gdrhook-bench", nullptr, &rcache);
    if (status != UCS_OK)
        return gdrhook::Result<std::unique_ptr<LookupCache>>::failure(
            gdrhook::Status::error(gdrhook::StatusCode::unsupported, status, "ucs_rcache_create"),
            std::string("ucs_rcache_create failed: ") + ucs_status_string(status));
    return std::unique_ptr<LookupCache>(std::make_unique<UcxCache>(rcache));
}

} // namespace bench
