// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/notify/alloc_subscribers.h"

#include <array>

namespace gdrhook {
namespace {

// Written once per place, before its bit is set (a release that the walk's
// acquire load pairs with); read only where the bit says so, or once
// `subscribed` counts it.
std::array<AllocSubscriber, max_alloc_subscribers> subscribers{};
std::atomic<int> subscribed{0};

static_assert(max_alloc_subscribers <= 8, "one bit each in hot_line.alloc_listeners");

} // namespace

AllocSubscription subscribe_to_allocations(const AllocSubscriber &subscriber)
{
    const int place = subscribed.load(std::memory_order_relaxed);
    if (place >= max_alloc_subscribers)
        return -1;
    subscribers[place] = subscriber;
    subscribed.store(place + 1, std::memory_order_release);
    return place;
}

void start_listening_to_allocations(AllocSubscription subscription)
{
    if (subscription >= 0 && subscription < max_alloc_subscribers)
        hot_line.alloc_listeners.fetch_or(static_cast<uint8_t>(1u << subscription),
                                          std::memory_order_release);
}

const AllocSubscriber *alloc_subscriber(AllocSubscription subscription)
{
    if (subscription < 0 || subscription >= subscribed.load(std::memory_order_acquire))
        return nullptr;
    return &subscribers[subscription];
}

void tell_after_alloc(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr,
                      uint64_t size)
{
    // In the order they subscribed.
    unsigned listening = hot_line.alloc_listeners.load(std::memory_order_acquire);
    for (int place = 0; listening; ++place, listening >>= 1)
        if ((listening & 1u) && subscribers[place].after_alloc)
            subscribers[place].after_alloc(api, via, kind, dev, addr, size);
}

void tell_libraries_may_have_loaded()
{
    const int count = subscribed.load(std::memory_order_acquire);
    for (int place = 0; place < count; ++place)
        if (subscribers[place].libraries_may_have_loaded)
            subscribers[place].libraries_may_have_loaded();
}

} // namespace gdrhook
