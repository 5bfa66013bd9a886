// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/notify/alloc_subscribers.h"

#include "cache/notify/subscriber_registry.h"

namespace gdrhook {
namespace {

// Constant-initialized: nothing runs at load time.
SubscriberRegistry<AllocSubscriber, &HotLine::alloc_listeners> subscribers;
static_assert(subscribers.capacity == max_alloc_subscribers,
              "one bit each in hot_line.alloc_listeners");

} // namespace

AllocSubscription subscribe_to_allocations(const AllocSubscriber &subscriber)
{
    return subscribers.subscribe(subscriber);
}

void start_listening_to_allocations(AllocSubscription subscription)
{
    subscribers.start_listening(subscription);
}

const AllocSubscriber *alloc_subscriber(AllocSubscription subscription)
{
    return subscribers.at(subscription);
}

void tell_after_alloc(const char *api, Via via, MemoryKind kind, int32_t dev, uint64_t addr,
                      uint64_t size)
{
    subscribers.each_listening([&](const AllocSubscriber &s, int) {
        if (s.after_alloc)
            s.after_alloc(api, via, kind, dev, addr, size);
    });
}

void tell_libraries_may_have_loaded()
{
    subscribers.each_subscribed([](const AllocSubscriber &s, int) {
        if (s.libraries_may_have_loaded)
            s.libraries_may_have_loaded();
    });
}

} // namespace gdrhook
