// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/pointers/pointer_answers.h"

#include "cache/base/driver_api.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/events/thread_state.h"
#include "cache/pointers/pointer_table.h"
#include "cache/pointers/unanswerable_memo.h"
#include "cache/record/alloc_tracker.h"

#include <atomic>
#include <mutex>

namespace gdrhook {

// Constant-initialized: nothing runs at load time.
std::atomic<uint8_t> pointer_answers_mode{pointer_answers_forward_all};
PointerTable pointer_table;
CountStripe pointer_query_stripes[count_stripes];

namespace {

std::atomic<uint8_t> &mode = pointer_answers_mode;
PointerTable &table = pointer_table;

// Moves at every step of every free (before and after the real call): a
// driver answer asked while it did not move is about memory no free
// touched meanwhile.
std::atomic<uint64_t> frees_seen{0};
// The table's place among a free's listeners. It listens from the first
// learning on: a process that never asks pays nothing at its frees.
FreeSubscription free_place = -1;
std::atomic<bool> listening{false};
// Pointers to send straight to the driver; it listens to allocations
// (which make it forget) from the first one it remembers.
UnanswerableMemo unanswerable;
AllocSubscription alloc_place = -1;
std::atomic<bool> listening_to_allocations{false};

// What the table may answer: memory the shim saw allocated, of a kind
// whose attributes stay what they were at the first query until its free.
bool answered_kind(MemoryKind kind)
{
    switch (kind) {
    case MemoryKind::device:
    case MemoryKind::pitch:
    case MemoryKind::pool:
    case MemoryKind::managed:
    case MemoryKind::host:
    case MemoryKind::host_registered: return true;
    default: return false;
    }
}

bool tracked_from_allocation(uint64_t base)
{
    if (!hot_line.tracker)
        return false;
    // Device, pitch, pool, managed and host memory share one key space.
    std::optional<Allocation> a = hot_line.tracker->find(MemoryKind::device, base);
    return a && a->addr == base && answered_kind(a->kind) && !a->graph;
}

// One learning: the allocation a query's pointer is in, and what was true
// before the driver was asked.
struct Learning {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t frees = 0;
    bool possible = false;
};

Learning begin_learning(uint64_t ptr, const PointerRecord *known)
{
    Learning l;
    if (known) { // a record, or the range found_by_range() was told
        if (!known->size)
            return l;
        l.base = known->base;
        l.size = known->size;
    } else {
        const DriverQueries *q = hot_line.queries;
        if (!q || !q->address_range || !q->address_range(ptr, &l.base, &l.size))
            return l;
    }
    // Listening, then the count, then the tracker: a free that takes the
    // allocation from the tracker after this (under the tracker's lock)
    // sees the table listening, and moves the count before it frees.
    if (!listening.load(std::memory_order_acquire)) {
        start_listening(free_place);
        listening.store(true, std::memory_order_release);
    }
    l.frees = frees_seen.load(std::memory_order_seq_cst);
    l.possible = tracked_from_allocation(l.base);
    return l;
}

// Keeps what `keep` takes from the driver's answer, if nothing was freed
// since begin_learning() and the allocation is still tracked.
template <typename Keep> void finish_learning(const Learning &l, uint64_t ptr, Keep &&keep)
{
    std::lock_guard<SpinThenSleepMutex> lock(table.lock());
    if (frees_seen.load(std::memory_order_seq_cst) != l.frees || !tracked_from_allocation(l.base))
        return;
    PointerRecord record;
    if (!table.find_base(l.base, record) || record.size != l.size) {
        record = PointerRecord{};
        record.base = l.base;
        record.size = l.size;
    }
    keep(record);
    table.put(record, ptr);
}

__attribute__((noinline, cold)) void log_difference(uint64_t ptr, int attribute, const char *api)
{
    add_one(&CountStripe::differences);
    if (!hot_line.pipeline)
        return;
    Event event = make_event(EventKind::error, api, Via::symbol, MemoryKind::none, ptr,
                             static_cast<uint64_t>(attribute));
    event.msg = "verify: a pointer query answered from the table differs from the driver's";
    event.tid = current_tid();
    hot_line.pipeline->submit(event);
}

__attribute__((noinline, cold)) int verify_one(void *data, int attribute, unsigned long long ptr,
                                               PointerAttributeFunction real)
{
    add_one(&CountStripe::verified);
    const AnsweredAttribute a = answered_attribute(attribute);
    uint64_t driver = 0;
    const int rc = real(&driver, attribute, ptr);
    if (rc != cuda::success || read_attribute(&driver, a) != read_attribute(data, a))
        log_difference(ptr, attribute, "cuPointerGetAttribute");
    if (rc == cuda::success)
        write_attribute(data, a, read_attribute(&driver, a));
    return rc; // the program gets the driver's answer
}

__attribute__((noinline, cold)) int verify_many(unsigned int count, int *attributes, void **data,
                                                unsigned long long ptr,
                                                PointerAttributesFunction real)
{
    add_one(&CountStripe::verified);
    uint64_t driver[32] = {};
    void *driver_data[32];
    for (unsigned int i = 0; i < count; ++i)
        driver_data[i] = &driver[i];
    const int rc = real(count, attributes, driver_data, ptr);
    for (unsigned int i = 0; i < count; ++i) {
        const AnsweredAttribute a = answered_attribute(attributes[i]);
        if (rc != cuda::success || read_attribute(&driver[i], a) != read_attribute(data[i], a))
            log_difference(ptr, attributes[i], "cuPointerGetAttributes");
        if (rc == cuda::success)
            write_attribute(data[i], a, read_attribute(&driver[i], a));
    }
    return rc;
}

__attribute__((noinline, cold)) int forward_one(void *data, int attribute, unsigned long long ptr,
                                                PointerAttributeFunction real)
{
    add_one(&CountStripe::forwarded);
    return real(data, attribute, ptr);
}

__attribute__((noinline, cold)) int forward_many(unsigned int count, int *attributes, void **data,
                                                 unsigned long long ptr,
                                                 PointerAttributesFunction real)
{
    add_one(&CountStripe::forwarded);
    return real(count, attributes, data, ptr);
}

// A pointer whose page had no hint to its allocation's record: the driver
// names the allocation's base (not a pointer query: its count stays one
// per allocation and attribute), and the record there, if any, answers.
// Else `range` keeps what the driver said, for the learning that follows
// (base and size 0: no allocation there).
bool found_by_range(uint64_t ptr, PointerRecord &record, PointerRecord &range)
{
    const DriverQueries *q = hot_line.queries;
    uint64_t base = 0, size = 0;
    if (!q || !q->address_range || !q->address_range(ptr, &base, &size))
        return false;
    range.base = base;
    range.size = size;
    if (!table.find_base(base, record) || !record.contains(ptr))
        return false;
    table.hint(record, ptr);
    return true;
}

// The memo's generation before a pointer is judged; listening to
// allocations from here on, so that one made after this read forgets the
// judgement.
uint64_t memo_generation()
{
    if (alloc_place >= 0 && !listening_to_allocations.load(std::memory_order_acquire)) {
        start_listening_to_allocations(alloc_place);
        listening_to_allocations.store(true, std::memory_order_release);
    }
    return unanswerable.generation();
}

void remember_if_unanswerable(const Learning &l, uint64_t ptr, uint64_t judged_at)
{
    if (!l.possible && alloc_place >= 0)
        unanswerable.remember(ptr, judged_at);
}

// A query the table could not answer at once: the record that holds ptr
// lacks the attribute (learnt here), or no hint led to one.
__attribute__((noinline, cold)) int learn_one(void *data, int attribute, unsigned long long ptr,
                                              PointerAttributeFunction real)
{
    if (unanswerable.holds(ptr))
        return forward_one(data, attribute, ptr, real);
    const uint64_t judged_at = memo_generation();
    const AnsweredAttribute a = answered_attribute(attribute);
    PointerRecord record, range;
    const bool found = table.find(ptr, record) || found_by_range(ptr, record, range);
    if (found && (record.known_single & attribute_bit(a))) {
        write_attribute(data, a, record.value(a));
        add_one(&CountStripe::answered);
        return cuda::success;
    }
    Learning l = begin_learning(ptr, found ? &record : &range);
    remember_if_unanswerable(l, ptr, judged_at);
    const int rc = real(data, attribute, ptr);
    add_one(&CountStripe::forwarded);
    if (l.possible && rc == cuda::success) {
        const uint64_t value = read_attribute(data, a);
        finish_learning(l, ptr, [&](PointerRecord &r) {
            if (r.keep(a, value))
                r.known_single |= attribute_bit(a);
        });
    }
    return rc;
}

// Whether the record holds every attribute asked, each for a result the
// program gave room for (a null one is the driver's to judge).
bool answers_all(unsigned int count, const int *attributes, void *const *data,
                 const PointerRecord &record)
{
    const uint8_t known = record.known_single | record.known_many;
    for (unsigned int i = 0; i < count; ++i) {
        const AnsweredAttribute a = answered_attribute(attributes[i]);
        if (a == AnsweredAttribute::count || !data[i] || !(known & attribute_bit(a)))
            return false;
    }
    return true;
}

void write_all(unsigned int count, const int *attributes, void **data, const PointerRecord &record)
{
    for (unsigned int i = 0; i < count; ++i) {
        const AnsweredAttribute a = answered_attribute(attributes[i]);
        write_attribute(data[i], a, record.value(a));
    }
    add_one(&CountStripe::answered);
}

__attribute__((noinline, cold)) int learn_many(unsigned int count, int *attributes, void **data,
                                               unsigned long long ptr,
                                               PointerAttributesFunction real,
                                               const PointerRecord *known)
{
    for (unsigned int i = 0; i < count; ++i)
        if (!data[i]) // the driver decides what that means
            return forward_many(count, attributes, data, ptr, real);
    if (!known && unanswerable.holds(ptr))
        return forward_many(count, attributes, data, ptr, real);
    const uint64_t judged_at = memo_generation();
    PointerRecord record, range;
    if (!known) {
        if (found_by_range(ptr, record, range)) {
            if (answers_all(count, attributes, data, record)) {
                write_all(count, attributes, data, record);
                return cuda::success;
            }
            known = &record;
        } else {
            known = &range;
        }
    }
    Learning l = begin_learning(ptr, known);
    remember_if_unanswerable(l, ptr, judged_at);
    const int rc = real(count, attributes, data, ptr);
    add_one(&CountStripe::forwarded);
    if (l.possible && rc == cuda::success) {
        finish_learning(l, ptr, [&](PointerRecord &r) {
            for (unsigned int i = 0; i < count; ++i) {
                const AnsweredAttribute a = answered_attribute(attributes[i]);
                if (a != AnsweredAttribute::count && r.keep(a, read_attribute(data[i], a)))
                    r.known_many |= attribute_bit(a);
            }
        });
    }
    return rc;
}

void forget(MemoryKind kind, uint64_t addr)
{
    // seq_cst: a learner that read the count before this reads the new one
    // when it checks, or its record is taken out below.
    frees_seen.fetch_add(1, std::memory_order_seq_cst);
    if (kind == MemoryKind::vmm_physical || !table.made())
        return; // a handle, not an address; or nothing was ever kept
    std::lock_guard<SpinThenSleepMutex> lock(table.lock());
    table.forget(addr);
}

} // namespace

int answer_pointer_attribute(void *data, int attribute, unsigned long long ptr,
                             PointerAttributeFunction real)
{
    if (GDRHOOK_LIKELY(answered_from_table(data, attribute, ptr)))
        return cuda::success;
    // Verify mode, or what the table does not hold.
    const uint8_t m = mode.load(std::memory_order_relaxed);
    const AnsweredAttribute a = answered_attribute(attribute);
    if (m == pointer_answers_forward_all || a == AnsweredAttribute::count || !data)
        return forward_one(data, attribute, ptr, real);
    uint64_t value;
    if (!table.answer(ptr, a, value))
        return learn_one(data, attribute, ptr, real);
    write_attribute(data, a, value);
    add_one(&CountStripe::answered);
    if (GDRHOOK_UNLIKELY(m == pointer_answers_verify))
        return verify_one(data, attribute, ptr, real);
    return cuda::success;
}

int answer_pointer_attributes(unsigned int count, int *attributes, void **data,
                              unsigned long long ptr, PointerAttributesFunction real)
{
    const uint8_t m = mode.load(std::memory_order_relaxed);
    if (GDRHOOK_UNLIKELY(m == pointer_answers_forward_all || !attributes || !data || count == 0 ||
                         count > 32))
        return forward_many(count, attributes, data, ptr, real);
    PointerRecord record;
    const bool found = table.find(ptr, record);
    if (GDRHOOK_UNLIKELY(!found || !answers_all(count, attributes, data, record)))
        return learn_many(count, attributes, data, ptr, real, found ? &record : nullptr);
    write_all(count, attributes, data, record);
    if (GDRHOOK_UNLIKELY(m == pointer_answers_verify))
        return verify_many(count, attributes, data, ptr, real);
    return cuda::success;
}

PointerQueryCounts pointer_query_counts()
{
    PointerQueryCounts total;
    for (const CountStripe &s : pointer_query_stripes) {
        total.answered += s.answered.load(std::memory_order_relaxed);
        total.forwarded += s.forwarded.load(std::memory_order_relaxed);
        total.verified += s.verified.load(std::memory_order_relaxed);
        total.differences += s.differences.load(std::memory_order_relaxed);
    }
    return total;
}

FreeSubscriber pointer_answers_free_subscriber()
{
    FreeSubscriber subscriber{};
    subscriber.name = "pointer-answers";
    subscriber.before_free = [](MemoryKind kind, uint64_t addr, uint64_t) { forget(kind, addr); };
    subscriber.before_context_teardown = [](MemoryKind kind, uint64_t addr, uint64_t) {
        forget(kind, addr);
    };
    subscriber.after_free = [](MemoryKind kind, uint64_t addr, uint64_t, uint64_t) {
        forget(kind, addr);
    };
    return subscriber;
}

AllocSubscriber pointer_answers_alloc_subscriber()
{
    AllocSubscriber subscriber{};
    subscriber.name = "pointer-answers";
    subscriber.after_alloc = [](const char *, Via, MemoryKind, int32_t, uint64_t, uint64_t) {
        unanswerable.forget_all();
    };
    return subscriber;
}

void set_up_pointer_answers(bool on, bool verify, FreeSubscription place,
                            AllocSubscription allocations_place)
{
    if (!on)
        return;
    free_place = place;
    alloc_place = allocations_place;
    mode.store(verify ? pointer_answers_verify : pointer_answers_answer, std::memory_order_release);
}

void pointer_answers_after_fork_in_child()
{
    mode.store(pointer_answers_forward_all, std::memory_order_relaxed);
    table.reinitialize_lock_after_fork();
    for (CountStripe &s : pointer_query_stripes) // the child's own queries from here on
        s.answered = s.forwarded = s.verified = s.differences = 0;
}

} // namespace gdrhook
