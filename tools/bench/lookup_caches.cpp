// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "lookup_caches.h"

#include "cache/backends/none_backend.h"

#include <algorithm>

namespace bench {
namespace {

using namespace gdrhook;

// Hold: get()+put() a hit, else lookup(). A template argument, so that a
// hit's loop has no branch of the benchmark's own.
template <bool Hold> class GdrhookCache final : public BatchedCache<GdrhookCache<Hold>> {
public:
    explicit GdrhookCache(const std::vector<Buffer> &buffers)
    {
        CacheOptions options;
        options.max_entries = 0;
        // The allocation table the hook would have: the buffers themselves.
        auto table = std::make_shared<std::vector<Buffer>>(buffers);
        std::sort(table->begin(), table->end(),
                  [](const Buffer &a, const Buffer &b) { return a.addr < b.addr; });
        options.allocation_of = [table](uint64_t addr, AllocationInfo &out) {
            auto it = std::upper_bound(table->begin(), table->end(), addr,
                                       [](uint64_t a, const Buffer &b) { return a < b.addr; });
            if (it == table->begin())
                return false;
            --it;
            if (addr >= it->addr + it->size)
                return false;
            out = AllocationInfo{it->addr, it->size, false};
            return true;
        };
        cache_ = std::make_unique<RegistrationCache>(std::make_unique<NoneBackend>(),
                                                     std::move(options));
    }
    const char *name() const override { return Hold ? "gdrhook.get_put" : "gdrhook.lookup"; }
    bool warm(const Buffer &buffer) override
    {
        Registration reg;
        return cache_->lookup(buffer.addr, buffer.size, reg).ok();
    }
    uint64_t hit(uint64_t addr, uint64_t len)
    {
        if constexpr (Hold) {
            HeldRegistration held;
            if (!cache_->get(addr, len, held).ok())
                return 0;
            uint64_t id = held.reg.id;
            cache_->put(held);
            return id;
        } else {
            Registration reg;
            return cache_->lookup(addr, len, reg).ok() ? reg.id : 0;
        }
    }

private:
    std::unique_ptr<RegistrationCache> cache_;
};

// The tag-check cache: our index, immutable during the run (so no
// reclamation cost), plus cuPointerGetAttribute(BUFFER_ID) on every hit.
class TagCheckCache final : public BatchedCache<TagCheckCache> {
public:
    explicit TagCheckCache(const Cuda &cuda) : query_(cuda.pointer_get_attribute)
    {
        root_ = index_empty();
    }
    ~TagCheckCache() override { index_destroy(root_); }
    const char *name() const override { return "tagcheck"; }
    bool warm(const Buffer &buffer) override
    {
        std::vector<void *> retired;
        IndexValues values;
        values.buffer_id = buffer.buffer_id;
        root_ = index_rebuild(root_, {},
                              IndexItem{buffer.addr, buffer.addr + buffer.size,
                                        reinterpret_cast<CacheEntry *>(buffer.addr), values},
                              retired);
        for (void *block : retired)
            index_free_block(block);
        return true;
    }
    uint64_t hit(uint64_t addr, uint64_t len)
    {
        const IndexRecord *found = index_find(root_, addr, addr + len);
        if (!found)
            return 0;
        unsigned long long now = 0;
        query_(&now, cuda::pointer_attribute_buffer_id, addr);
        // A mismatch would be a re-pin; the fake driver answers with an
        // error for pointers it did not allocate, which costs the same.
        return now == found->values.buffer_id ? found->start | 1 : found->start;
    }

private:
    int (*query_)(void *, int, unsigned long long);
    IndexRoot *root_;
};

// The tag check's driver call alone, no cache: what each hit of a library
// that does the tag check pays the driver, or gdrhook when it runs under
// the shim (which answers the buffer ID from its own table).
class PointerQuery final : public BatchedCache<PointerQuery> {
public:
    explicit PointerQuery(const Cuda &cuda) : query_(cuda.pointer_get_attribute) {}
    const char *name() const override { return "query"; }
    bool warm(const Buffer &buffer) override
    {
        unsigned long long id = 0;
        return query_(&id, cuda::pointer_attribute_buffer_id, buffer.addr) == cuda::success;
    }
    uint64_t hit(uint64_t addr, uint64_t)
    {
        unsigned long long id = 0;
        return query_(&id, cuda::pointer_attribute_buffer_id, addr) == cuda::success ? id | 1 : 0;
    }

private:
    int (*query_)(void *, int, unsigned long long);
};

} // namespace

std::unique_ptr<LookupCache> make_pointer_query(const Cuda &cuda)
{
    if (!cuda.pointer_get_attribute)
        return nullptr;
    return std::make_unique<PointerQuery>(cuda);
}

std::unique_ptr<LookupCache> make_gdrhook_cache(const std::vector<Buffer> &buffers, bool hold)
{
    if (hold)
        return std::make_unique<GdrhookCache<true>>(buffers);
    return std::make_unique<GdrhookCache<false>>(buffers);
}

std::unique_ptr<LookupCache> make_tagcheck_cache(const Cuda &cuda)
{
    if (!cuda.pointer_get_attribute)
        return nullptr;
    return std::make_unique<TagCheckCache>(cuda);
}

} // namespace bench
