// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/notify/free_subscribers.h"

#include "cache/notify/subscriber_registry.h"

namespace gdrhook {
namespace {

// Constant-initialized: nothing runs at load time.
SubscriberRegistry<FreeSubscriber, &HotLine::free_listeners> subscribers;
static_assert(subscribers.capacity == max_free_subscribers,
              "one bit each in hot_line.free_listeners");

} // namespace

FreeSubscription subscribe_to_frees(const FreeSubscriber &subscriber)
{
    return subscribers.subscribe(subscriber);
}

void start_listening(FreeSubscription subscription)
{
    subscribers.start_listening(subscription);
}

const FreeSubscriber *free_subscriber(FreeSubscription subscription)
{
    return subscribers.at(subscription);
}

void tell_before_free(MemoryKind kind, uint64_t addr, uint64_t size)
{
    subscribers.each_listening([&](const FreeSubscriber &s, int) {
        if (s.before_free)
            s.before_free(kind, addr, size);
    });
}

void tell_before_context_teardown(MemoryKind kind, uint64_t addr, uint64_t size)
{
    subscribers.each_listening([&](const FreeSubscriber &s, int) {
        if (s.before_context_teardown)
            s.before_context_teardown(kind, addr, size);
    });
}

FreeClocks read_clocks_after_free()
{
    FreeClocks clocks;
    subscribers.each_listening([&](const FreeSubscriber &s, int place) {
        if (s.clock_after_free)
            clocks.of[place] = s.clock_after_free();
    });
    return clocks;
}

void tell_after_free(MemoryKind kind, uint64_t addr, uint64_t size, const FreeClocks &clocks)
{
    subscribers.each_listening([&](const FreeSubscriber &s, int place) {
        if (s.after_free)
            s.after_free(kind, addr, size, clocks.of[place]);
    });
}

void tell_pool_released()
{
    subscribers.each_listening([&](const FreeSubscriber &s, int) {
        if (s.pool_released)
            s.pool_released();
    });
}

} // namespace gdrhook
