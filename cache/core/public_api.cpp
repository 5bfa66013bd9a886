// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// include/gdrhook.h over the registration cache. Nothing here throws across
// the C boundary: allocation failures become -ENOMEM.
#include "include/gdrhook.h"

#include "cache/core/public_api.h"

#include "cache/core/host_aliases.h"
#include "cache/core/process_cache.h"
#include "cache/registration/registration_cache.h"

#include <atomic>
#include <cstring>
#include <new>

namespace gdrhook {
namespace {

std::atomic<RegistrationCache *> testing_cache{nullptr};

RegistrationCache *the_cache()
{
    if (RegistrationCache *cache = testing_cache.load(std::memory_order_acquire))
        return cache;
    // Null until the shim has started (any interposed call starts it) or
    // with GDRHOOK_PIN=off: the API then answers -ENODEV.
    return process_cache();
}

int32_t kind_of(const PinBackend &backend)
{
    return backend_row(backend.kind()).registration; // backends/backend_kinds.h
}

// The hold travels in the opaque words: record, slot, entry.
static_assert(sizeof(void *) <= sizeof(uint64_t));

} // namespace

void set_public_cache_for_testing(RegistrationCache *cache)
{
    testing_cache.store(cache, std::memory_order_release);
}

} // namespace gdrhook

using namespace gdrhook;

extern "C" {

GDRHOOK_API int gdrhook_get(const void *ptr, size_t length, gdrhook_registration *out)
{
    if (!ptr || !out)
        return -EINVAL;
    RegistrationCache *cache = the_cache();
    if (!cache)
        return -ENODEV;
    try {
        const uint64_t asked = reinterpret_cast<uintptr_t>(ptr);
        // A device address of host memory is the host range's registration
        // (host_aliases.h); base is told in the address the caller used.
        uint64_t addr = asked;
        host_address_of(asked, addr);
        HeldRegistration held;
        Status status = cache->get(addr, length, held);
        if (!status.ok())
            return to_negative_errno(status);
        // A pin made at allocation left the memory as the program set it:
        // the library that will use it gets it set up for a peer first.
        if (status = cache->prepare_for_peer(held); !status.ok()) {
            cache->put(held);
            return to_negative_errno(status);
        }
        std::memset(out, 0, sizeof(*out));
        out->base = held.reg.base + (asked - addr);
        out->length = held.reg.length;
        out->kind = kind_of(cache->backend());
        out->dmabuf_fd = held.reg.fd;
        out->dmabuf_offset = held.reg.offset_of(addr);
        out->kmod_handle = held.reg.handle;
        out->buffer_id = held.reg.buffer_id;
        out->opaque[0] = reinterpret_cast<uintptr_t>(held.record);
        out->opaque[1] = held.slot;
        out->opaque[2] = reinterpret_cast<uintptr_t>(held.entry);
        return 0;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

GDRHOOK_API int gdrhook_put(gdrhook_registration *registration)
{
    if (!registration || (!registration->opaque[0] && !registration->opaque[2]))
        return -EINVAL;
    RegistrationCache *cache = the_cache();
    if (!cache)
        return -ENODEV;
    HeldRegistration held;
    held.record = reinterpret_cast<ThreadRecord *>(static_cast<uintptr_t>(registration->opaque[0]));
    held.slot = static_cast<uint32_t>(registration->opaque[1]);
    held.entry = reinterpret_cast<CacheEntry *>(static_cast<uintptr_t>(registration->opaque[2]));
    if (held.record && held.slot >= hold_slot_count)
        return -EINVAL;
    cache->put(held);
    registration->opaque[0] = registration->opaque[1] = registration->opaque[2] = 0;
    return 0;
}

GDRHOOK_API int gdrhook_get_stats(gdrhook_stats *out, size_t size)
{
    if (!out)
        return -EINVAL;
    RegistrationCache *cache = the_cache();
    if (!cache)
        return -ENODEV;
    try {
        CacheStats s = cache->stats();
        gdrhook_stats full{};
        full.hits = s.hits;
        full.misses = s.misses;
        full.pins = s.pins;
        full.pin_failures = s.pin_failures;
        full.unpins = s.unpins;
        full.evictions = s.evictions;
        full.invalidated = s.invalidated;
        full.entries = s.entries;
        full.bytes_pinned = s.bytes_pinned;
        full.peak_bytes_pinned = s.peak_bytes_pinned;
        full.verify_checks = s.verify_checks;
        full.verify_mismatches = s.verify_mismatches;
        std::memcpy(out, &full, size < sizeof(full) ? size : sizeof(full));
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

GDRHOOK_API uint32_t gdrhook_api_version(void)
{
    return GDRHOOK_API_VERSION;
}

} // extern "C"
