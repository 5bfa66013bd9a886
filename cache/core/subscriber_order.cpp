// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/subscriber_order.h"

#include "cache/core/process_cache.h"
#include "cache/core/runtime.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"
#include "cache/pinning/free_invalidation.h"
#include "cache/pinning/pin_events.h"
#include "cache/ucx/ucx_bridge.h"

#include <array>
#include <cstdint>

namespace gdrhook {
namespace {

enum class Listener : uint8_t { registration_cache, ucx_bridge, count };
constexpr int listener_count = static_cast<int>(Listener::count);

// What each listener does at a free and at an allocation, and its set-up,
// handed its places: a row each, in the enum's order.
struct ListenerRow {
    Listener who;
    FreeSubscriber (*free)();
    AllocSubscriber (*alloc)();
    void (*set_up)(Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place);
};
constexpr ListenerRow rows[] = {
    {Listener::registration_cache, registration_cache_free_subscriber, pin_on_alloc_subscriber,
     [](Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place) {
         // Frees reach it once the cache exists (process_cache.cpp).
         rt.cache_subscription = free_place;
         if (rt.config.pin == PinPolicy::alloc)
             set_up_pin_on_alloc(rt.config.pin_min_size, process_cache, alloc_place);
     }},
    {Listener::ucx_bridge, ucx_free_subscriber, ucx_alloc_subscriber,
     [](Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place) {
         // From here on where libucm is loaded, else once it is found.
         set_up_ucx_bridge(rt.config.ucx, free_place, alloc_place);
     }},
};

// The orders, first row first. A free reaches the cache before UCX
// (notify/free_subscribers.h); an allocation reaches them the other way
// round (notify/alloc_subscribers.h).
constexpr Listener free_order[] = {Listener::registration_cache, Listener::ucx_bridge};
constexpr Listener alloc_order[] = {Listener::ucx_bridge, Listener::registration_cache};

constexpr bool rows_in_enum_order()
{
    int row = 0;
    for (const ListenerRow &r : rows)
        if (static_cast<int>(r.who) != row++)
            return false;
    return row == listener_count;
}
static_assert(rows_in_enum_order(), "one row per listener, in the enum's order");

// Every listener hears both sequences, so each has exactly one place in
// each order. (A listener that heard one only would need a flag in its
// row: GCC cannot fold a function's address against null under
// -fsanitize=undefined, so no static_assert here tests a pointer.)
template <size_t N> constexpr bool each_once(const Listener (&order)[N])
{
    for (const ListenerRow &r : rows) {
        int places = 0;
        for (Listener who : order)
            places += who == r.who;
        if (places != 1)
            return false;
    }
    return true;
}
static_assert(each_once(free_order), "each listener has one place in free_order");
static_assert(each_once(alloc_order), "each listener has one place in alloc_order");

const ListenerRow &row_of(Listener who)
{
    return rows[static_cast<int>(who)];
}

} // namespace

void subscribe_in_order(Runtime &rt)
{
    std::array<FreeSubscription, listener_count> free_places;
    std::array<AllocSubscription, listener_count> alloc_places;
    free_places.fill(-1);
    alloc_places.fill(-1);
    for (Listener who : free_order)
        free_places[static_cast<int>(who)] = subscribe_to_frees(row_of(who).free());
    for (Listener who : alloc_order)
        alloc_places[static_cast<int>(who)] = subscribe_to_allocations(row_of(who).alloc());
    for (const ListenerRow &r : rows)
        r.set_up(rt, free_places[static_cast<int>(r.who)], alloc_places[static_cast<int>(r.who)]);
}

} // namespace gdrhook
