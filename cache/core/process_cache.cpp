// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/process_cache.h"

#include "cache/backends/kmod_backend.h"
#include "cache/backends/select_backend.h"
#include "cache/base/clock.h"
#include "cache/base/diagnostics.h"
#include "cache/events/event_clock.h"
#include "cache/record/recorder.h"
#include "cache/registration/registration_cache.h"
#include "cache/core/runtime.h"
#include "cache/events/thread_state.h"

#include <atomic>
#include <mutex>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gdrhook {
namespace {

std::atomic<bool> creation_failed{false};
std::mutex creation_lock;
const char *backend_name = "none";
DriverApi driver_api; // filled once, before the cache exists

// What caused the pin that on_pin reports: the allocation being pinned
// under GDRHOOK_PIN=alloc, else a library's gdrhook_get().
struct PinCause {
    const char *api = "gdrhook_get";
    Via via = Via::symbol;
    MemoryKind mem = MemoryKind::none;
    int32_t dev = -1;
};
GDRHOOK_THREAD_LOCAL PinCause pin_cause;

// An event of the cache's, stamped now on the calling thread.
Event cache_event(EventKind kind, const char *api, uint64_t addr, uint64_t size)
{
    Event event = make_event(kind, api, Via::symbol, MemoryKind::none, addr, size);
    event.backend = backend_name;
    return event;
}

// One the worker records itself: revoke, unpin.
Event consumer_event(EventKind kind, uint64_t addr, uint64_t size, uint64_t handle)
{
    Event event = cache_event(kind, "gdrhook_worker", addr, size);
    event.handle = handle;
    return event;
}

bool allocation_of(uint64_t addr, AllocationInfo &out)
{
    // Pointer kinds share one key space in the tracker: one lookup finds
    // whichever allocation starts at an address; its kind says what it is.
    AllocTracker &tracker = runtime().tracker;
    auto found = tracker.find(MemoryKind::device, addr);
    if (!found) {
        // An interior pointer (a library asking for part of an allocation).
        const DriverQueries &q = driver_queries();
        uint64_t base = 0, size = 0;
        if (!q.address_range || !q.address_range(addr, &base, &size))
            return false;
        found = tracker.find(MemoryKind::device, base);
        if (!found)
            found = Allocation{base, size};
    }
    if (found->kind == MemoryKind::host || found->kind == MemoryKind::host_registered)
        return false; // not GPU memory: let the backend refuse it
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

void log_pin(const Registration &reg)
{
    Event event = cache_event(EventKind::pin, pin_cause.api, reg.base, reg.length);
    event.via = pin_cause.via;
    event.mem = pin_cause.mem;
    event.dev = pin_cause.dev;
    event.handle = reg.id;
    runtime().pipeline->submit(event);
}

void log_stale_hit(uint64_t addr, uint64_t, uint64_t)
{
    Event event = cache_event(EventKind::error, pin_cause.api, addr, 0);
    event.msg = "verify: a cache hit disagrees with the driver's buffer id";
    runtime().pipeline->submit(event);
}

// Revocations arrive on the module's fd while the worker may sleep on its
// futex: this thread waits in poll() and pokes the worker. Only the kmod
// backend has such an fd.
void watch_revocations(int fd)
{
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        std::thread([fd] {
            pthread_setname_np(pthread_self(), "gdrhook-revoke");
            for (;;) {
                pollfd p{fd, POLLIN, 0};
                int n = poll(&p, 1, -1);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
                    return;
                runtime().pipeline->poke();
                // The worker reads the events; give it the chance before
                // polling the (level-triggered) fd again.
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }).detach();
    } catch (const std::exception &error) {
        diagnostics().warn("cannot watch for revocations ({}); they are read after "
                           "the next free",
                           error.what());
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

RegistrationCache *create_cache()
{
    Runtime &rt = runtime();
    const DriverQueries &q = driver_queries();
    if (q.driver_api)
        q.driver_api(&driver_api);
    int device = q.current_device ? q.current_device() : -1;
    BackendChoice choice;
    Status status = select_backend(rt.config.backend, driver_api, device < 0 ? 0 : device,
                                   KmodBackend::default_path(), choice);
    if (!status.ok())
        diagnostics().error("GDRHOOK_BACKEND={}: {}", to_string(rt.config.backend),
                            choice.reason);
    else
        diagnostics().info("backend {}: {}", choice.backend->name(), choice.reason);
    backend_name = choice.backend->name();
    const int revocation_fd = choice.backend->revocation_fd();

    CacheOptions options = CacheOptions::from(rt.config);
    options.allocation_of = allocation_of;
    options.buffer_id = buffer_id_of;
    options.wakeup = [] { runtime().pipeline->poke(); };
    options.on_mismatch = log_stale_hit;
    options.on_pin = log_pin;
    auto *cache = new RegistrationCache(std::move(choice.backend), std::move(options));
    if (revocation_fd >= 0)
        watch_revocations(revocation_fd);
    return cache; // never destroyed: frees may reach it during exit
}

// The consumer's own state (the consumer lock guards it). A pin's event
// travels through the queue, but its unpin is done, and logged, by the
// batch hook, which may run before the queue delivered the pin (the hook
// runs between batches). Releases wait here until their pin is logged, so
// the log always shows a pin before its revoke or unpin.
struct ConsumerState {
    std::unordered_map<uint64_t, Event> pins_logged; // entry id -> its pin event
    std::vector<Event> waiting;                // revoke/unpin events
    std::vector<uint64_t> revoked_handles;
    // A forked child has not yet restated the pins it inherited.
    bool inherited_unlogged = false;
};
ConsumerState &consumer_state()
{
    static auto *state = new ConsumerState(); // never destroyed: used at exit
    return *state;
}

// The child holds its own copy of every registration the parent had logged
// as pinned and not yet released, and will release those copies and log
// the unpins: its log restates their pins first, so that it reads on its
// own (`gdrhook log check` pairs each unpin with a pin of the same
// process). Written before the child's first event or at its exit, not at
// the fork: a child that only execs another program leaves no log, and the
// exec closes its copies of the dma-buf fds (they are close-on-exec).
void log_inherited_pins(EventPipeline &pipeline, ConsumerState &state)
{
    state.inherited_unlogged = false;
    for (auto &[handle, pin] : state.pins_logged) {
        Event event = pin;
        stamp_now(event);
        event.tid = current_tid();
        event.reason = "inherited";
        pin = event;
        pipeline.write_from_consumer(event);
    }
}

void write_releases_whose_pin_is_logged(EventPipeline &pipeline)
{
    ConsumerState &state = consumer_state();
    auto still_waiting = state.waiting.begin();
    for (Event &event : state.waiting) {
        auto pin = state.pins_logged.find(event.handle);
        if (pin == state.pins_logged.end()) {
            *still_waiting++ = event;
            continue;
        }
        if (event.kind == EventKind::unpin)
            state.pins_logged.erase(pin);
        pipeline.write_from_consumer(event);
    }
    state.waiting.erase(still_waiting, state.waiting.end());
}

} // namespace

RegistrationCache *shim_cache()
{
    if (RegistrationCache *cache = hot_line.shim_cache.load(std::memory_order_acquire))
        return cache;
    if (creation_failed.load(std::memory_order_relaxed) || !hook_enabled() ||
        runtime().config.pin == PinPolicy::off)
        return nullptr;
    std::lock_guard<std::mutex> lock(creation_lock);
    if (RegistrationCache *cache = hot_line.shim_cache.load(std::memory_order_relaxed))
        return cache;
    try {
        RegistrationCache *cache = create_cache();
        hot_line.shim_cache.store(cache, std::memory_order_release);
        return cache;
    } catch (const std::exception &error) {
        diagnostics().error("cannot create the registration cache ({}); nothing is pinned",
                            error.what());
        creation_failed.store(true, std::memory_order_relaxed);
        return nullptr;
    }
}

void invalidate_freed(uint64_t addr, uint64_t size)
{
    // A pinned range was freed: have the worker unpin it now rather than
    // when it next looks at the queue (prompt release, DESIGN.md 3).
    if (RegistrationCache *cache = existing_shim_cache(); cache && cache->invalidate(addr, size))
        runtime().pipeline->poke();
}

uint64_t pin_clock_after_free()
{
    RegistrationCache *cache = existing_shim_cache();
    return cache ? cache->pin_clock() : 0;
}

void invalidate_after_free(uint64_t addr, uint64_t size, uint64_t clock)
{
    if (RegistrationCache *cache = existing_shim_cache();
        cache && cache->invalidate(addr, size, clock))
        runtime().pipeline->poke();
}

void set_pin_on_alloc(bool on)
{
    hot_line.pin_on_alloc = on;
}

void pin_new_allocation(const char *api, Via via, const Allocation &allocation)
{
    if (!hot_line.pin_on_alloc || allocation.size < runtime().config.pin_min_size)
        return;
    switch (allocation.kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::pool:
    case MemoryKind::vmm_mapping:
        break;
    default:
        return; // host memory is not GPU memory; managed memory is never pinned
    }
    RegistrationCache *cache = shim_cache();
    if (!cache)
        return;
    pin_cause = PinCause{api, via, allocation.kind, allocation.dev};
    Registration reg;
    Status status = cache->lookup(allocation.addr, allocation.size, reg);
    pin_cause = PinCause{};
    if (status.ok())
        return;
    Event event = cache_event(EventKind::error, api, allocation.addr, allocation.size);
    event.via = via;
    event.mem = allocation.kind;
    event.dev = allocation.dev;
    event.rc = status.detail;
    event.msg = status.what;
    runtime().pipeline->submit(event);
}

void note_logged_pin(Event &event)
{
    ConsumerState &state = consumer_state();
    if (state.inherited_unlogged) // the child's first event: restate them before it
        log_inherited_pins(*runtime().pipeline, state);
    if (event.kind == EventKind::pin)
        state.pins_logged.emplace(event.handle, event);
}

void unpin_batch()
{
    RegistrationCache *cache = existing_shim_cache();
    if (!cache)
        return;
    EventPipeline &pipeline = *runtime().pipeline;
    ConsumerState &state = consumer_state();
    if (state.inherited_unlogged) // a child that logged nothing else, at its exit
        log_inherited_pins(pipeline, state);

    state.revoked_handles.clear();
    if (cache->backend().take_revocations(state.revoked_handles)) {
        for (const Registration &reg : cache->revoke(state.revoked_handles))
            state.waiting.push_back(
                consumer_event(EventKind::revoke, reg.base, reg.length, reg.id));
    }
    if (cache->has_retired()) {
        cache->drain_unpins([&state](const UnpinRecord &record) {
            // A pin discarded before anyone saw it (its memory was freed
            // while it ran) was never logged as `pin`.
            if (record.reason == UnpinReason::stale)
                return;
            Event event =
                consumer_event(EventKind::unpin, record.addr, record.length, record.id);
            event.lat_ns = record.lat_ns;
            event.reason = to_string(record.reason);
            event.rc = record.status.ok() ? 0 : record.status.detail;
            event.msg = record.status.ok() ? nullptr : record.status.what;
            state.waiting.push_back(event);
        });
    }
    if (!state.waiting.empty())
        write_releases_whose_pin_is_logged(pipeline);
}


void retire_shim_cache_at_exit()
{
    RegistrationCache *cache = existing_shim_cache();
    if (!cache)
        return;
    cache->retire_all();
    runtime().pipeline->poke(); // the last drain runs the batch hook
}

void print_shim_cache_statistics()
{
    RegistrationCache *cache = existing_shim_cache();
    if (!cache)
        return;
    CacheStats s = cache->stats();
    diagnostics().info("cache ({}): {} hits, {} misses, {} pins ({} failed), {} unpins "
                       "({} failed), {} invalidated, {} revoked, {} evictions; bytes pinned: "
                       "peak {}, at exit {}; verify: {} checks, {} stale hits",
                       backend_name, s.hits, s.misses, s.pins, s.pin_failures, s.unpins,
                       s.unpin_failures, s.invalidated, s.revoked, s.evictions,
                       s.peak_bytes_pinned, s.bytes_pinned, s.verify_checks,
                       s.verify_mismatches);
    if (s.verify_mismatches)
        diagnostics().error("verify mode caught {} stale cache hits", s.verify_mismatches);
}

void shim_cache_after_fork_in_child()
{
    if (RegistrationCache *cache = existing_shim_cache())
        cache->after_fork_in_child();
    new (&creation_lock) std::mutex();
}

void note_fork_in_child()
{
    consumer_state().inherited_unlogged = !consumer_state().pins_logged.empty();
}

} // namespace gdrhook
