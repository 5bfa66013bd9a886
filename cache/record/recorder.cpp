// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/record/recorder.h"

#include "cache/base/capture.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/events/queued_event.h"
#include "cache/events/thread_state.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/profile.h"

#include <array>
#include <atomic>
#include <climits>

namespace gdrhook {
namespace {

const DriverQueries no_queries{};

// The hook's driver queries, handed to the runtime as it started.
const DriverQueries &queries()
{
    return hot_line.queries ? *hot_line.queries : no_queries;
}

// The calling thread's current context: straight to the driver's function
// once the hook has looked it up (hot_line.h), else through queries().
GDRHOOK_ALWAYS_INLINE uint64_t current_context_of_thread()
{
    if (auto query = hot_line.context_query.load(std::memory_order_acquire);
        GDRHOOK_LIKELY(query)) {
        void *context = nullptr;
        return query(&context) == 0 ? reinterpret_cast<uint64_t>(context) : 0;
    }
    return queries().current_context ? queries().current_context() : 0;
}

// The device of the calling thread's current context, remembered per
// thread: asking the driver costs a call per allocation. Any context
// teardown bumps the generation, since a handle may be reused.
GDRHOOK_ALWAYS_INLINE int32_t device_of(uint64_t context)
{
    uint32_t generation = hot_line.context_generation.load(std::memory_order_acquire);
    HotThreadState &cached = hot_thread_state();
    if (GDRHOOK_LIKELY(context && cached.context == context &&
                       cached.device_generation == generation))
        return cached.device;
    int32_t dev = queries().current_device ? queries().current_device() : -1;
    cached.context = context;
    cached.device_generation = generation;
    cached.device = dev;
    return dev;
}

constexpr int max_devices = 64;
struct PrimaryContext {
    std::atomic<uint64_t> context{0};
    std::atomic<int64_t> references{0};
};
std::array<PrimaryContext, max_devices> primary_contexts;

void submit(const Event &event)
{
    ++hot_thread_state().events_recorded;
    hot_line.pipeline->submit(event);
}

GDRHOOK_HOT RecordedEvent recorded_now(EventKind kind, const char *api, Via via, MemoryKind mem,
                                       uint64_t addr, uint64_t size)
{
    RecordedEvent event;
    event.time = queued_time_now();
    event.addr = addr;
    event.size = size;
    event.api = api;
    event.tid = current_tid();
    event.dev = -1;
    event.rc = 0;
    event.kind = kind;
    event.via = via;
    event.mem = mem;
    return event;
}

// The rare event the queue's form cannot hold (queued_event.h) goes whole.
Event whole(const RecordedEvent &recorded)
{
    Event event;
    set_time_from_queued(event, recorded.time);
    event.addr = recorded.addr;
    event.size = recorded.size;
    event.api = recorded.api;
    event.tid = recorded.tid;
    event.dev = recorded.dev;
    event.rc = recorded.rc;
    event.kind = recorded.kind;
    event.via = recorded.via;
    event.mem = recorded.mem;
    return event;
}

GDRHOOK_HOT void submit(const RecordedEvent &event)
{
    ++hot_thread_state().events_recorded;
    QueuedEvent queued;
    if (GDRHOOK_UNLIKELY(!queued_text(event.api, queued.api) || event.dev < INT8_MIN ||
                         event.dev > INT8_MAX)) {
        hot_line.pipeline->submit(whole(event));
        return;
    }
    queued.time = event.time;
    queued.entry_id = 0;
    queued.msg = queued_null_text;
    queued.backend = queued_null_text;
    pack_shared_fields(event, queued);
    hot_line.pipeline->submit(queued);
}

bool is_device_pointer_kind(MemoryKind kind)
{
    return kind == MemoryKind::device || kind == MemoryKind::pitch || kind == MemoryKind::pool ||
           kind == MemoryKind::managed || kind == MemoryKind::ipc;
}

bool is_pointer_kind(MemoryKind kind)
{
    return is_device_pointer_kind(kind) || kind == MemoryKind::host ||
           kind == MemoryKind::host_registered || kind == MemoryKind::vmm_mapping;
}

// The range the driver places addr in (an allocation, or a VMM mapping);
// false where it does not know addr.
bool driver_range(uint64_t addr, uint64_t &base, uint64_t &size)
{
    return queries().address_range && queries().address_range(addr, &base, &size);
}

// An unmap must cover whole mappings: the driver refuses one that starts
// or ends inside a mapping (CUDA_ERROR_INVALID_VALUE on the H200), and
// takes two whole neighbours at once.
bool cuts_a_mapping(uint64_t addr, uint64_t size)
{
    uint64_t base = 0, length = 0;
    if (driver_range(addr, base, length) && base != addr)
        return true;
    return size && driver_range(addr + size - 1, base, length) && base + length != addr + size;
}

// The rare frees, out of the hot path: a VMM unmap, which may end several
// mappings, and a free of an address that was not tracked where `kind`
// says (freed through another family than it was allocated with, or never
// seen: then the driver names its size, the free has not run yet).
// False for a free the driver refuses for certain: an address inside an
// allocation that starts elsewhere, or an unmap that cuts a mapping, frees
// nothing, and nothing of that live memory may be forgotten or unpinned for
// it; its event says size 0.
__attribute__((noinline, cold)) bool find_untracked(FreeTicket &ticket, MemoryKind kind,
                                                    uint64_t addr, uint64_t size_hint)
{
    AllocTracker &tracker = *hot_line.tracker;
    if (kind == MemoryKind::vmm_mapping) {
        if (cuts_a_mapping(addr, size_hint)) {
            ticket.event.size = 0;
            return false;
        }
        // One unmap may end several mappings; report the range unmapped.
        auto mappings = tracker.remove_mappings_in(addr, size_hint);
        if (!mappings.empty()) {
            ticket.tracked = true;
            ticket.allocation = mappings.front();
            ticket.allocation.size = size_hint;
        }
        return true;
    }
    if (!is_pointer_kind(kind))
        return true; // a pool's or a graph's handle: nothing to ask the driver
    if (is_device_pointer_kind(kind))
        for (MemoryKind other : {MemoryKind::device, MemoryKind::pitch, MemoryKind::pool,
                                 MemoryKind::managed, MemoryKind::ipc}) {
            if (other != kind && (ticket.tracked = tracker.take(other, addr, ticket.allocation)))
                return true;
        }
    uint64_t base = 0, size = 0;
    if (size_hint || !driver_range(addr, base, size))
        return true;
    if (base != addr)
        return false; // size_hint, the event's size, is 0
    ticket.event.size = size;
    return true;
}

// An imported IPC mapping: its size is the driver's to say.
__attribute__((noinline, cold)) uint64_t size_of_imported(uint64_t addr)
{
    uint64_t base = 0, size = 0;
    return driver_range(addr, base, size) ? size : 0;
}

// The pair's paths, in two copies: without the profile's timers (inlined
// into the public functions below) and with them (out of line, cold).
template <bool Profiled>
GDRHOOK_ALWAYS_INLINE FreeTicket begin_free_as(const char *api, Via via, MemoryKind kind,
                                               uint64_t addr, uint64_t size_hint)
{
    FreeTicket ticket{}; // zeroed: RecordedEvent has no defaults
    // Freeing a null pointer frees nothing (cudaFree(nullptr) is how
    // programs initialize the runtime): no event.
    if (GDRHOOK_UNLIKELY(addr == 0 && is_pointer_kind(kind)))
        return ticket;
    if (!runtime_running())
        return ticket;
    ProfileTimerIf<Profiled> whole(ProfilePart::free_before_real);
    ticket.active = true;
    {
        ProfileTimerIf<Profiled> timed(ProfilePart::pair_clock);
        ticket.event = recorded_now(EventKind::free, api, via, kind, addr, size_hint);
    }

    if (GDRHOOK_LIKELY(kind != MemoryKind::vmm_mapping)) {
        ProfileTimerIf<Profiled> timed(ProfilePart::pair_tracker);
        ticket.tracked = hot_line.tracker->take(kind, addr, ticket.allocation);
    }
    if (GDRHOOK_UNLIKELY(!ticket.tracked) && !find_untracked(ticket, kind, addr, size_hint))
        return ticket; // refused by the driver: logged, nothing forgotten
    if (GDRHOOK_LIKELY(ticket.tracked)) {
        ticket.event.mem = ticket.allocation.kind;
        ticket.event.dev = ticket.allocation.dev;
        if (!size_hint)
            ticket.event.size = ticket.allocation.size;
    }
    // Before the real free: once it returns the address can come back from
    // the next allocation, and no cache may still hold the old memory.
    if (anyone_listens_to_frees())
        tell_before_free(ticket.event.mem, addr, ticket.event.size);
    return ticket;
}

template <bool Profiled> GDRHOOK_ALWAYS_INLINE void end_free_as(FreeTicket &ticket, int rc)
{
    ProfileTimerIf<Profiled> whole(ProfilePart::free_after_real);
    ticket.event.rc = rc;
    if (GDRHOOK_UNLIKELY(rc != 0 && ticket.tracked))
        hot_line.tracker->insert(ticket.allocation); // still allocated
    else if (rc == 0 && anyone_listens_to_frees())
        // A lookup racing the free may have pinned between the first
        // invalidation and the real free (notify/free_subscribers.h).
        tell_after_free(ticket.event.mem, ticket.event.addr, ticket.event.size,
                        read_clocks_after_free());
    ProfileTimerIf<Profiled> timed(ProfilePart::pair_push);
    submit(ticket.event);
}

template <bool Profiled>
GDRHOOK_ALWAYS_INLINE void record_alloc_as(const char *api, Via via, MemoryKind kind, uint64_t addr,
                                           uint64_t size, int rc)
{
    RecordedEvent event;
    {
        ProfileTimerIf<Profiled> timed(ProfilePart::pair_clock);
        event = recorded_now(EventKind::alloc, api, via, kind, addr, size);
    }
    event.rc = rc;
    if (GDRHOOK_UNLIKELY(rc == 0 && size == 0 && kind == MemoryKind::ipc))
        size = event.size = size_of_imported(addr);
    if (GDRHOOK_LIKELY(rc == 0)) {
        Allocation allocation;
        allocation.addr = addr;
        allocation.size = size;
        // An allocation node's memory is freed as a pool's (cuMemFree,
        // cuMemFreeAsync, a free node): tracked as one.
        allocation.kind = kind == MemoryKind::graph ? MemoryKind::pool : kind;
        {
            ProfileTimerIf<Profiled> timed(ProfilePart::pair_context);
            allocation.context = current_context_of_thread();
            allocation.dev = device_of(allocation.context);
        }
        event.dev = allocation.dev;
        // A stream-ordered allocation during a capture is a graph node:
        // logged as graph memory, tracked (and freed) as a pool's.
        if (GDRHOOK_UNLIKELY(kind == MemoryKind::pool) && capture_in_progress())
            event.mem = MemoryKind::graph;
        allocation.graph = event.mem == MemoryKind::graph;
        {
            ProfileTimerIf<Profiled> timed(ProfilePart::pair_tracker);
            hot_line.tracker->insert(allocation);
        }
        {
            ProfileTimerIf<Profiled> timed(ProfilePart::pair_push);
            submit(event);
        }
        // Once tracked and logged: a `pin` follows its `alloc`, and a free
        // from inside a listener finds the allocation (notify/alloc_subscribers.h).
        if (anyone_listens_to_allocations()) {
            ProfileTimerIf<Profiled> timed(ProfilePart::pair_alloc_listeners);
            tell_after_alloc(api, via, kind, allocation.dev, addr, size);
        }
        return;
    }
    ProfileTimerIf<Profiled> timed(ProfilePart::pair_push);
    submit(event);
}

__attribute__((noinline, cold)) FreeTicket
begin_free_profiled(const char *api, Via via, MemoryKind kind, uint64_t addr, uint64_t size_hint)
{
    return begin_free_as<true>(api, via, kind, addr, size_hint);
}

__attribute__((noinline, cold)) void end_free_profiled(FreeTicket &ticket, int rc)
{
    end_free_as<true>(ticket, rc);
}

__attribute__((noinline, cold)) void record_alloc_profiled(const char *api, Via via,
                                                           MemoryKind kind, uint64_t addr,
                                                           uint64_t size, int rc)
{
    record_alloc_as<true>(api, via, kind, addr, size, rc);
}

} // namespace

FreeTicket begin_free(const char *api, Via via, MemoryKind kind, uint64_t addr, uint64_t size_hint)
{
    if (GDRHOOK_UNLIKELY(profiling()))
        return begin_free_profiled(api, via, kind, addr, size_hint);
    return begin_free_as<false>(api, via, kind, addr, size_hint);
}

void end_free(FreeTicket &ticket, int rc)
{
    if (!ticket.active)
        return;
    if (GDRHOOK_UNLIKELY(profiling()))
        return end_free_profiled(ticket, rc);
    end_free_as<false>(ticket, rc);
}

void record_alloc(const char *api, Via via, MemoryKind kind, uint64_t addr, uint64_t size, int rc)
{
    if (!runtime_running())
        return;
    if (GDRHOOK_UNLIKELY(profiling()))
        return record_alloc_profiled(api, via, kind, addr, size, rc);
    record_alloc_as<false>(api, via, kind, addr, size, rc);
}

TeardownTicket begin_context_teardown(const char *api, Via via, uint64_t context, int32_t dev)
{
    TeardownTicket ticket;
    if (!runtime_running())
        return ticket;
    ticket.active = true;
    ticket.event = make_event(EventKind::ctx_destroy, api, via, MemoryKind::none, context, 0);
    ticket.event.dev = dev;
    // UCX hears of what the teardown ends before it runs; the tracker
    // forgets it only once the driver has taken the context down.
    if (anyone_listens_to_frees() && context)
        for (const Allocation &a : hot_line.tracker->in_context(context))
            tell_before_context_teardown(a.kind, a.addr, a.size);
    return ticket;
}

void end_context_teardown(TeardownTicket &ticket, int rc)
{
    if (!ticket.active)
        return;
    ticket.event.rc = rc;
    hot_line.context_generation.fetch_add(1, std::memory_order_acq_rel);
    if (rc == 0 && ticket.event.addr) {
        uint64_t bytes = 0;
        const FreeClocks clocks = read_clocks_after_free();
        for (const Allocation &a : hot_line.tracker->remove_context(ticket.event.addr)) {
            bytes += a.size;
            tell_after_free(a.kind, a.addr, a.size, clocks);
        }
        ticket.event.size = bytes; // what the teardown released
    }
    // The registration cache unpinned on this thread as it heard of each
    // (free_invalidation.h), so the context's memory is back when the call
    // returns.
    submit(ticket.event);
}

void before_pool_release()
{
    if (runtime_running() && anyone_listens_to_frees())
        tell_pool_released();
}

void note_primary_context_retained(int32_t dev, uint64_t context)
{
    if (dev < 0 || dev >= max_devices)
        return;
    primary_contexts[dev].context.store(context, std::memory_order_relaxed);
    primary_contexts[dev].references.fetch_add(1, std::memory_order_relaxed);
}

PrimaryRelease begin_primary_context_release(int32_t dev)
{
    PrimaryRelease release;
    if (dev < 0 || dev >= max_devices)
        return release;
    PrimaryContext &pc = primary_contexts[dev];
    release.counted = true;
    if (pc.references.fetch_sub(1, std::memory_order_relaxed) == 1)
        release.destroys = pc.context.load(std::memory_order_relaxed);
    return release;
}

void end_primary_context_release(int32_t dev, const PrimaryRelease &release, int rc)
{
    // A release the driver refused (one more than the retains, or one that
    // failed) took no reference: the next last release must still be seen
    // as the teardown it is.
    if (release.counted && rc != 0)
        primary_contexts[dev].references.fetch_add(1, std::memory_order_relaxed);
}

uint64_t primary_context_of(int32_t dev)
{
    if (dev < 0 || dev >= max_devices)
        return 0;
    return primary_contexts[dev].context.load(std::memory_order_relaxed);
}

uint64_t events_recorded_by_this_thread()
{
    return hot_thread_state().events_recorded;
}

} // namespace gdrhook
