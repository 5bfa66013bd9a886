// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Who subscribed to one sequence and who of them listens: a fixed table of
// at most eight subscribers and a byte of the hot line (prim/hot_line.h),
// one bit per place, that the hot path tests before any walk. The free
// sequence (free_subscribers.h) and the allocation sequence
// (alloc_subscribers.h) are each one of these, over their own subscriber
// type and their own byte; what a step means is theirs, the places, the
// orderings and the walks are here.
//
// What it promises:
//  - a subscriber's place is its order: every walk calls the listening
//    ones from the first place up;
//  - two subscriptions never get the same place, even two at once on two
//    threads (an atomic increment hands the places out);
//  - a walk calls a subscriber with its whole entry, as it was subscribed,
//    or not at all, whichever thread subscribed it and whichever started
//    it listening, while other threads walk;
//  - a place nobody subscribed never listens.
//
// The orderings. A place's entry is written with plain stores (a struct
// of function pointers) and read by walks on other threads with plain
// loads; all that orders them is the two bytes below, so:
//  - subscribe() writes the entry, then sets the place's bit in
//    `written_` with a release;
//  - start_listening() reads `written_` with an acquire (which may run on
//    another thread than subscribe(): UCX starts listening on whichever
//    thread first finds libucm, the cache on whichever first needs it) and
//    only for a written place sets its bit in the hot-line byte, with a
//    release;
//  - a walk reads the hot-line byte with an acquire before it reads any
//    entry.
// The entry's stores thus happen before the bit's release in `written_`,
// which happens before start_listening's release on the hot line, which
// happens before the walk that sees the bit reads the entry: the walk sees
// the whole entry. Bits of other places set later by fetch_or (a
// read-modify-write) continue the release sequence, so a walk that reads
// a later value still synchronizes with every earlier bit's release. A
// relaxed store or load at any of the three steps lets the walk read an
// entry half written (ThreadSanitizer reports it as a race:
// tests/cache/notify/test_subscriber_registry.cpp). The place itself needs no
// ordering, only atomicity: fetch_add hands each caller its own.
#pragma once

#include "cache/prim/hot_line.h"

#include <array>
#include <atomic>
#include <cstdint>

namespace gdrhook {

// `Listening` is the hot line's byte for this sequence, a member of
// HotLine: a walk reads it at a constant offset of the one hot line, no
// pointer to follow.
template <typename Subscriber, std::atomic<uint8_t> HotLine::*Listening> class SubscriberRegistry {
public:
    // One bit each in the hot line's byte.
    static constexpr int capacity = 8;

    // The next place in the order, or -1 when all are taken. From any
    // thread; the subscriber hears nothing until start_listening(place).
    int subscribe(const Subscriber &subscriber)
    {
        const int place = taken_.fetch_add(1, std::memory_order_relaxed);
        if (place >= capacity)
            return -1;
        table_[place] = subscriber;
        written_.fetch_or(bit(place), std::memory_order_release);
        return place;
    }

    // From now on every walk calls `place`; a place not subscribed (or
    // -1) changes nothing.
    void start_listening(int place)
    {
        if (is_written(place))
            (hot_line.*Listening).fetch_or(bit(place), std::memory_order_release);
    }

    // The subscriber at `place`, or null where nobody subscribed.
    const Subscriber *at(int place) const { return is_written(place) ? &table_[place] : nullptr; }

    // Calls step(subscriber, place) for each listening subscriber, first
    // place first.
    template <typename Step> void each_listening(Step &&step) const
    {
        unsigned listening = (hot_line.*Listening).load(std::memory_order_acquire);
        for (int place = 0; listening; ++place, listening >>= 1)
            if (listening & 1u)
                step(table_[place], place);
    }

    // The same for every subscriber, listening or not (one that waits for
    // a library before it listens).
    template <typename Step> void each_subscribed(Step &&step) const
    {
        unsigned written = written_.load(std::memory_order_acquire);
        for (int place = 0; written; ++place, written >>= 1)
            if (written & 1u)
                step(table_[place], place);
    }

private:
    static constexpr uint8_t bit(int place) { return static_cast<uint8_t>(1u << place); }

    bool is_written(int place) const
    {
        return place >= 0 && place < capacity &&
               (written_.load(std::memory_order_acquire) & bit(place));
    }

    std::array<Subscriber, capacity> table_{};
    std::atomic<int> taken_{0};       // places handed out (past capacity: refused)
    std::atomic<uint8_t> written_{0}; // a bit per place whose entry is written
};

} // namespace gdrhook
