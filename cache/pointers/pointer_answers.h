// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// cuPointerGetAttribute and cuPointerGetAttributes answered from the
// shim's own table (pointer_table.h) where the shim saw the allocation
// made and sees every free of it; everything else goes to the driver,
// unchanged.
//
// What a query gets:
//  - a pointer inside an allocation tracked from its allocation on (device,
//    pitch, pool, managed, host or registered host memory; not an IPC
//    import, graph memory, a VMM mapping, nor memory from before the shim),
//    for an attribute of pointer_attributes.h whose value the driver gave
//    once already for that allocation: the driver's value, from the table;
//  - anything else: the driver's own answer. The first query of each
//    attribute of an allocation is that answer, kept for the next ones
//    (cuPointerGetAttributes keeps what it wrote; cuPointerGetAttribute
//    keeps what succeeded: one call fails where the other writes 0).
//
// Forgetting: every free path tells the table before the real free and
// again once it returned (notify/free_subscribers.h), so a query that
// starts after a free returned never finds the freed allocation's record.
// A driver answer is kept only if no free ran while it was asked and the
// allocation was tracked before and after: an answer about memory freed
// meanwhile, and then reallocated at the same address, is never kept.
//
// GDRHOOK_VERIFY=1: every answer from the table is checked against the
// driver's, which the program gets; each difference is logged.
#pragma once

#include "cache/events/event.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"
#include "cache/pointers/pointer_table.h"
#include "cache/prim/hot_path.h"

#include <atomic>
#include <cstdint>

namespace gdrhook {

using PointerAttributeFunction = int (*)(void *data, int attribute, unsigned long long ptr);
using PointerAttributesFunction = int (*)(unsigned int count, int *attributes, void **data,
                                          unsigned long long ptr);

GDRHOOK_HOT int answer_pointer_attribute(void *data, int attribute, unsigned long long ptr,
                                         PointerAttributeFunction real);

// The state the common answer reads, shared with the wrapper so that it
// answers inline (answered_from_table) and looks the driver's function
// up only when it needs it.
enum PointerAnswersMode : uint8_t {
    pointer_answers_forward_all,
    pointer_answers_answer,
    pointer_answers_verify, // answer_pointer_attribute() checks each answer
};
extern std::atomic<uint8_t> pointer_answers_mode;
extern PointerTable pointer_table;
// A thread adds to its own stripe of counters (one of 64, picked by its
// thread pointer) without an atomic read-modify-write, which would cost as
// much as the answer: two threads that share a stripe may lose a count
// between them.
struct alignas(64) CountStripe {
    std::atomic<uint64_t> answered, forwarded, verified, differences;
};
inline constexpr int count_stripes = 64;
extern CountStripe pointer_query_stripes[count_stripes];

// A thread's stripe, from its thread pointer (its TLS block: a page or
// more from any other thread's), which costs no memory read.
inline CountStripe &own_stripe()
{
    const auto tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
    return pointer_query_stripes[((tp >> 12) ^ (tp >> 18)) & (count_stripes - 1)];
}

inline void add_one(std::atomic<uint64_t> CountStripe::*counter)
{
    std::atomic<uint64_t> &c = own_stripe().*counter;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The common case of cuPointerGetAttribute: answered from the table, not
// in verify mode. False for anything else, which answer_pointer_attribute()
// takes.
__attribute__((always_inline)) inline bool answered_from_table(void *data, int attribute,
                                                               unsigned long long ptr)
{
    const AnsweredAttribute a = answered_attribute(attribute);
    uint64_t value;
    if (GDRHOOK_UNLIKELY(
            pointer_answers_mode.load(std::memory_order_relaxed) != pointer_answers_answer ||
            a == AnsweredAttribute::count || !data || !pointer_table.answer(ptr, a, value)))
        return false;
    write_attribute(data, a, value);
    add_one(&CountStripe::answered);
    return true;
}

GDRHOOK_HOT int answer_pointer_attributes(unsigned int count, int *attributes, void **data,
                                          unsigned long long ptr, PointerAttributesFunction real);

struct PointerQueryCounts {
    uint64_t answered = 0;    // from the table
    uint64_t forwarded = 0;   // to the driver
    uint64_t verified = 0;    // GDRHOOK_VERIFY: answers checked against the driver
    uint64_t differences = 0; // ...that differed
};
// Summed over the threads' stripes.
PointerQueryCounts pointer_query_counts();

// The listener's row (core/subscriber_order.cpp): frees make the table
// forget; allocations make it forget the pointers it sends straight to
// the driver (unanswerable_memo.h).
FreeSubscriber pointer_answers_free_subscriber();
AllocSubscriber pointer_answers_alloc_subscriber();
// GDRHOOK_POINTER_QUERIES and GDRHOOK_VERIFY, once, at start.
void set_up_pointer_answers(bool on, bool verify, FreeSubscription place,
                            AllocSubscription allocations_place);
// In a forked child every query goes to the driver: the child's driver
// does not hold the parent's allocations the way the table says.
void pointer_answers_after_fork_in_child();

} // namespace gdrhook
