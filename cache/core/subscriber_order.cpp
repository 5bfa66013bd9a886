// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/subscriber_order.h"

#include "cache/core/process_cache.h"
#include "cache/core/runtime.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"
#include "cache/pinning/free_invalidation.h"
#include "cache/pinning/pin_events.h"
#include "cache/pointers/pointer_answers.h"
#include "cache/ucx/ucx_bridge.h"

#include <array>
#include <iterator>

namespace gdrhook {
namespace {

// Each listener's set-up, handed its places (-1: it hears none of that
// sequence).
void set_up_registration_cache(Runtime &rt, FreeSubscription free_place,
                               AllocSubscription alloc_place)
{
    // Frees reach it once the cache exists (process_cache.cpp).
    rt.cache_subscription = free_place;
    if (rt.config.pin == PinPolicy::alloc)
        set_up_pin_on_alloc(rt.config.pin_min_size, process_cache, alloc_place);
}

void set_up_ucx(Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place)
{
    // From here on where libucm is loaded, else once it is found.
    set_up_ucx_bridge(rt.config.ucx, free_place, alloc_place);
}

void set_up_pointer_table(Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place)
{
    set_up_pointer_answers(rt.config.pointer_queries, rt.config.verify, free_place, alloc_place);
}

// A listener: what it does at a free and at an allocation, its set-up,
// and its place in each order (0 first). A free reaches the cache before
// UCX (notify/free_subscribers.h); an allocation reaches them the other
// way round (notify/alloc_subscribers.h). The pointer table forgets a
// free's allocation between the two: UCX's handlers may ask the driver's
// pointer attributes of the memory being freed. At an allocation it forgets
// which pointers it sends straight to the driver. Adding a listener is one row.
struct ListenerRow {
    FreeSubscriber (*free)();
    AllocSubscriber (*alloc)();
    void (*set_up)(Runtime &rt, FreeSubscription free_place, AllocSubscription alloc_place);
    int free_place;
    int alloc_place;
};
constexpr ListenerRow rows[] = {
    // what it does at a free, at an allocation; its set-up; its places
    {registration_cache_free_subscriber, pin_on_alloc_subscriber, set_up_registration_cache, 0, 1},
    {ucx_free_subscriber, ucx_alloc_subscriber, set_up_ucx, 2, 0},
    {pointer_answers_free_subscriber, pointer_answers_alloc_subscriber, set_up_pointer_table, 1, 2},
};
constexpr int listener_count = static_cast<int>(std::size(rows));

// Every listener hears both sequences, each at a place of its own: the
// places of each order are 0 to listener_count - 1, once each.
template <int ListenerRow::*place> constexpr bool places_are_an_order()
{
    for (int wanted = 0; wanted < listener_count; ++wanted) {
        int found = 0;
        for (const ListenerRow &r : rows)
            found += r.*place == wanted;
        if (found != 1)
            return false;
    }
    return true;
}
static_assert(places_are_an_order<&ListenerRow::free_place>(),
              "each listener has its own place in the order of frees");
static_assert(places_are_an_order<&ListenerRow::alloc_place>(),
              "each listener has its own place in the order of allocations");

} // namespace

void subscribe_in_order(Runtime &rt)
{
    std::array<FreeSubscription, listener_count> free_places;
    std::array<AllocSubscription, listener_count> alloc_places;
    free_places.fill(-1);
    alloc_places.fill(-1);
    for (int place = 0; place < listener_count; ++place)
        for (int row = 0; row < listener_count; ++row) {
            if (rows[row].free_place == place)
                free_places[row] = subscribe_to_frees(rows[row].free());
            if (rows[row].alloc_place == place)
                alloc_places[row] = subscribe_to_allocations(rows[row].alloc());
        }
    for (int row = 0; row < listener_count; ++row)
        rows[row].set_up(rt, free_places[row], alloc_places[row]);
}

} // namespace gdrhook
