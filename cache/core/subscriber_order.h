// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Who hears of frees and of allocations, and in which order: one table, in
// subscriber_order.cpp, that the runtime subscribes from at start. The
// notify/ headers say why each order is what it is; a new listener is a
// row of the table and a place in each order it hears.
#pragma once

#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"

#include <array>
#include <cstdint>

namespace gdrhook {

enum class Listener : uint8_t {
    registration_cache, // its free invalidation; pin-on-alloc
    ucx_bridge,         // UCX's caches
    count
};
constexpr int listener_count = static_cast<int>(Listener::count);

// Each listener's place in each sequence (-1: it does not hear it).
struct Subscriptions {
    std::array<FreeSubscription, listener_count> free;
    std::array<AllocSubscription, listener_count> alloc;
    FreeSubscription free_place(Listener who) const { return free[static_cast<int>(who)]; }
    AllocSubscription alloc_place(Listener who) const { return alloc[static_cast<int>(who)]; }
};

// The runtime's, once, at start: every listener subscribed, in the table's
// orders. None listens yet; each starts when it has something to do.
Subscriptions subscribe_in_order();

} // namespace gdrhook
