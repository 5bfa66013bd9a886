// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/subscriber_order.h"

#include "cache/pinning/free_invalidation.h"
#include "cache/pinning/pin_events.h"
#include "cache/ucx/ucx_bridge.h"

namespace gdrhook {
namespace {

// What each listener does at a free and at an allocation (null: it does
// not hear that sequence), a row each, in the enum's order.
struct ListenerSteps {
    Listener who;
    FreeSubscriber (*free)();
    AllocSubscriber (*alloc)();
};
constexpr ListenerSteps steps[] = {
    {Listener::registration_cache, registration_cache_free_subscriber, pin_on_alloc_subscriber},
    {Listener::ucx_bridge, ucx_free_subscriber, ucx_alloc_subscriber},
};

// The orders, first row first. A free reaches the cache before UCX
// (notify/free_subscribers.h); an allocation reaches them the other way
// round (notify/alloc_subscribers.h).
constexpr Listener free_order[] = {Listener::registration_cache, Listener::ucx_bridge};
constexpr Listener alloc_order[] = {Listener::ucx_bridge, Listener::registration_cache};

constexpr bool rows_in_enum_order()
{
    int row = 0;
    for (const ListenerSteps &s : steps)
        if (static_cast<int>(s.who) != row++)
            return false;
    return row == listener_count;
}
static_assert(rows_in_enum_order(), "one row of steps per listener, in the enum's order");

// Every listener that hears a sequence has exactly one place in its order.
template <size_t N>
constexpr bool each_once(const Listener (&order)[N], bool hears(const ListenerSteps &))
{
    for (const ListenerSteps &s : steps) {
        int places = 0;
        for (Listener who : order)
            places += who == s.who;
        if (places != (hears(s) ? 1 : 0))
            return false;
    }
    return true;
}
static_assert(each_once(free_order, [](const ListenerSteps &s) { return s.free != nullptr; }),
              "each listener of frees has one place in free_order");
static_assert(each_once(alloc_order, [](const ListenerSteps &s) { return s.alloc != nullptr; }),
              "each listener of allocations has one place in alloc_order");

const ListenerSteps &steps_of(Listener who)
{
    return steps[static_cast<int>(who)];
}

} // namespace

Subscriptions subscribe_in_order()
{
    Subscriptions places;
    places.free.fill(-1);
    places.alloc.fill(-1);
    for (Listener who : free_order)
        places.free[static_cast<int>(who)] = subscribe_to_frees(steps_of(who).free());
    for (Listener who : alloc_order)
        places.alloc[static_cast<int>(who)] = subscribe_to_allocations(steps_of(who).alloc());
    return places;
}

} // namespace gdrhook
