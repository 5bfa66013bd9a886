// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/process_cache.h"

#include "cache/backends/descriptor_budget.h"
#include "cache/backends/kmod_backend.h"
#include "cache/backends/select_backend.h"
#include "cache/base/diagnostics.h"
#include "cache/core/runtime.h"
#include "cache/notify/free_subscribers.h"
#include "cache/pinning/pin_events.h"
#include "cache/pinning/unpinner.h"
#include "cache/registration/registration_cache.h"

#include <atomic>
#include <mutex>
#include <new>

namespace gdrhook {
namespace {

std::atomic<bool> creation_failed{false};
std::mutex creation_lock;
const char *backend_name = "none";
DriverApi driver_api; // filled once, before the cache exists
// The backend pins registered host memory (pin_user_pages); set once,
// before the cache that asks allocation_of() exists.
bool registered_host_pinnable = false;

// Widens a lookup to the whole allocation the tracker (or the driver)
// knows.
bool allocation_of(uint64_t addr, AllocationInfo &out)
{
    // Pointer kinds share one key space in the tracker: one lookup finds
    // whichever allocation starts at an address; its kind says what it is.
    AllocTracker &tracker = runtime().tracker;
    auto found = tracker.find(MemoryKind::device, addr);
    if (!found) {
        // An interior pointer (a library asking for part of an allocation).
        const DriverQueries &q = runtime().queries;
        uint64_t base = 0, size = 0;
        if (!q.address_range || !q.address_range(addr, &base, &size))
            return false;
        found = tracker.find(MemoryKind::device, base);
        if (!found)
            found = Allocation{base, size};
    }
    // Registered host memory is the program's own: the driver does not
    // export it, and only a backend that pins pages takes it. Page-locked
    // memory the driver allocated exports where the device says so
    // (PinBackend::pins_host_memory).
    if (found->kind == MemoryKind::host_registered && !registered_host_pinnable)
        return false;
    out.base = found->addr;
    out.size = found->size;
    out.managed = found->kind == MemoryKind::managed;
    return true;
}

uint64_t buffer_id_of(uint64_t addr)
{
    unsigned long long id = 0;
    if (!driver_api.pointer_get_attribute ||
        driver_api.pointer_get_attribute(&id, cuda::pointer_attribute_buffer_id, addr) !=
            cuda::success)
        return 0;
    return id;
}

RegistrationCache *create_cache(Runtime &rt)
{
    const DriverQueries &q = rt.queries;
    if (q.driver_api)
        q.driver_api(&driver_api);
    int device = q.current_device ? q.current_device() : -1;
    BackendChoice choice;
    Status status = select_backend(rt.config.backend, driver_api, device < 0 ? 0 : device,
                                   KmodBackend::default_path(), choice);
    if (!status.ok())
        diagnostics().error("GDRHOOK_BACKEND={}: {}", to_string(rt.config.backend), choice.reason);
    else
        diagnostics().info("backend {}: {}", choice.backend->name(), choice.reason);
    backend_name = choice.backend->name();
    registered_host_pinnable = choice.backend->pins_registered_host_memory();
    set_pin_event_backend(backend_name);
    const int revocation_fd = choice.backend->revocation_fd();

    CacheOptions options = CacheOptions::from(rt.config);
    if (choice.backend->pins_hold_descriptors()) {
        options.max_descriptors = descriptor_budget(rt.descriptor_limit);
        diagnostics().info("dma-buf pins hold at most {} descriptors (RLIMIT_NOFILE {} at start)",
                           options.max_descriptors, rt.descriptor_limit);
    }
    options.allocation_of = allocation_of;
    options.buffer_id = buffer_id_of;
    EventPipeline *pipeline = rt.pipeline;
    options.wakeup = [pipeline] { pipeline->poke(); };
    options.on_mismatch = log_stale_hit;
    options.on_pin = log_pin;
    auto *cache = new RegistrationCache(std::move(choice.backend), std::move(options));
    if (revocation_fd >= 0 && rt.unpinner)
        rt.unpinner->watch_revocations(revocation_fd);
    return cache; // never destroyed: frees may reach it during exit
}

} // namespace

RegistrationCache *process_cache()
{
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire))
        return cache;
    if (creation_failed.load(std::memory_order_relaxed) || !runtime_running() ||
        runtime().config.pin == PinPolicy::off)
        return nullptr;
    std::lock_guard<std::mutex> lock(creation_lock);
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_relaxed))
        return cache;
    try {
        RegistrationCache *cache = create_cache(runtime());
        hot_line.cache.store(cache, std::memory_order_release);
        start_listening(runtime().cache_subscription); // frees reach it from now on
        return cache;
    } catch (const std::exception &error) {
        diagnostics().error("cannot create the registration cache ({}); nothing is pinned",
                            error.what());
        creation_failed.store(true, std::memory_order_relaxed);
        return nullptr;
    }
}

void retire_process_cache_at_exit()
{
    RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire);
    if (!cache)
        return;
    cache->retire_all();
    runtime().pipeline->poke(); // the last drain runs the unpinner
}

void print_process_cache_statistics()
{
    // Skips are counted with or without a cache (managed, host memory
    // never create one); the line only when there were some.
    uint64_t any_skip = 0;
    for (int r = 0; r < static_cast<int>(SkipReason::count); ++r)
        any_skip += skips(static_cast<SkipReason>(r));
    if (any_skip)
        diagnostics().info("pin-on-alloc skips: {} capture, {} managed, {} ipc, {} host, "
                           "{} not_exportable, {} unsupported, {} fd_budget",
                           skips(SkipReason::capture), skips(SkipReason::managed),
                           skips(SkipReason::ipc), skips(SkipReason::host),
                           skips(SkipReason::not_exportable), skips(SkipReason::unsupported),
                           skips(SkipReason::fd_budget));
    RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire);
    if (!cache)
        return;
    CacheStats s = cache->stats();
    diagnostics().info("cache ({}): {} hits, {} misses, {} pins ({} failed), {} unpins "
                       "({} failed), {} invalidated, {} revoked, {} evictions; bytes pinned: "
                       "peak {}, at exit {}; verify: {} checks, {} stale hits",
                       backend_name, s.hits, s.misses, s.pins, s.pin_failures, s.unpins,
                       s.unpin_failures, s.invalidated, s.revoked, s.evictions, s.peak_bytes_pinned,
                       s.bytes_pinned, s.verify_checks, s.verify_mismatches);
    if (s.verify_mismatches)
        diagnostics().error("verify mode caught {} stale cache hits", s.verify_mismatches);
}

void process_cache_before_fork()
{
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire))
        cache->hold_for_fork();
}

void process_cache_after_fork_in_parent()
{
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire))
        cache->after_fork_in_parent();
}

void process_cache_after_fork_in_child()
{
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire))
        cache->after_fork_in_child();
    new (&creation_lock) std::mutex();
}

} // namespace gdrhook
