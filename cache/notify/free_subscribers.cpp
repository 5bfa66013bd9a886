// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/notify/free_subscribers.h"

namespace gdrhook {
namespace {

// Written once per place, before its bit is set (a release that the walks'
// acquire load pairs with); read only where the bit says so.
std::array<FreeSubscriber, max_free_subscribers> subscribers{};
std::atomic<int> subscribed{0};

static_assert(max_free_subscribers <= 8, "one bit each in hot_line.free_listeners");

// Calls `step` for every listening subscriber, in the order they subscribed.
template <typename Step> void each_listening(Step &&step)
{
    unsigned listening = hot_line.free_listeners.load(std::memory_order_acquire);
    for (int place = 0; listening; ++place, listening >>= 1)
        if (listening & 1u)
            step(subscribers[place], place);
}

} // namespace

FreeSubscription subscribe_to_frees(const FreeSubscriber &subscriber)
{
    const int place = subscribed.fetch_add(1, std::memory_order_relaxed);
    if (place >= max_free_subscribers)
        return -1;
    subscribers[place] = subscriber;
    return place;
}

void start_listening(FreeSubscription subscription)
{
    if (subscription >= 0 && subscription < max_free_subscribers)
        hot_line.free_listeners.fetch_or(static_cast<uint8_t>(1u << subscription),
                                         std::memory_order_release);
}

const FreeSubscriber *free_subscriber(FreeSubscription subscription)
{
    if (subscription < 0 || subscription >= subscribed.load(std::memory_order_relaxed) ||
        subscription >= max_free_subscribers)
        return nullptr;
    return &subscribers[subscription];
}

void tell_before_free(MemoryKind kind, uint64_t addr, uint64_t size)
{
    each_listening([&](const FreeSubscriber &s, int) {
        if (s.before_free)
            s.before_free(kind, addr, size);
    });
}

void tell_before_context_teardown(MemoryKind kind, uint64_t addr, uint64_t size)
{
    each_listening([&](const FreeSubscriber &s, int) {
        if (s.before_context_teardown)
            s.before_context_teardown(kind, addr, size);
    });
}

FreeClocks read_clocks_after_free()
{
    FreeClocks clocks;
    each_listening([&](const FreeSubscriber &s, int place) {
        if (s.clock_after_free)
            clocks.of[place] = s.clock_after_free();
    });
    return clocks;
}

void tell_after_free(MemoryKind kind, uint64_t addr, uint64_t size, const FreeClocks &clocks)
{
    each_listening([&](const FreeSubscriber &s, int place) {
        if (s.after_free)
            s.after_free(kind, addr, size, clocks.of[place]);
    });
}

void tell_pool_released()
{
    each_listening([&](const FreeSubscriber &s, int) {
        if (s.pool_released)
            s.pool_released();
    });
}

} // namespace gdrhook
