// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The optional profile (GDRHOOK_PROFILE=1): where a free's wait and an
// allocation/free pair's cost go, part by part, timed with the cycle
// counter and kept in one histogram a part, printed as the process ends.
// Off, a timer is one load of the hot line (already in cache on every
// path that has one) and a branch; nothing is written.
//
// Each histogram has 8 buckets per power of two (within 1/8 of the value
// it reports), counted with relaxed atomics: several threads time the
// same part at once. The counts are shared cache lines, so a profiled run
// is a little slower than a plain one where threads time the same part;
// the profile says where time goes, not what a plain run costs.
#pragma once

#include "cache/prim/cycle_counter.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gdrhook {

// The parts, in the order the report lists them.
enum class ProfilePart : uint8_t {
    // A free that unpins, on the thread that reclaims (the freeing thread,
    // or the worker): waiting for the reclaimer's round lock (behind other
    // threads' rounds), the round (taking what was retired, the holds'
    // fence and their scan), the backend's release (dma-buf
    // close, module UNPIN), waiting for another thread's release of an
    // entry this free retired, and the whole unpin as the free sees it.
    reclaim_lock_wait,
    reclaim_round,
    release,
    release_wait_in_flight,
    free_unpin,
    // Per released entry: from its invalidation to the end of its release
    // (the `unpin` line's lat_ns), and whether the worker released it.
    unpin_latency,
    unpin_latency_by_worker,
    // The worker's round that frees what unpinned entries and old index
    // blocks occupy (Reclaimer::free_unreachable()): its membarrier(2)
    // and the scan of the read sections, off every free's path.
    reclaim_memory,
    // A free as the shim runs it around the real call: before it (the
    // tracker, the cache's invalidation and any unpin) and after it (the
    // second invalidation, the event's push).
    free_before_real,
    free_after_real,
    // An allocation/free pair's parts on the calling thread: the event
    // made (its clock read, its thread), the tracker, the context and
    // device queries, the event packed and pushed, the listeners (pin on
    // allocation, UCX). Timed in the profiled copy of the pair's paths
    // only (ProfileTimerIf, recorder.cpp).
    pair_clock,
    pair_tracker,
    pair_context,
    pair_push,
    pair_alloc_listeners,
    // The log writer, on the worker: one event handled and formatted.
    writer_event,
    count
};

const char *to_string(ProfilePart part);

inline bool profiling()
{
    return GDRHOOK_UNLIKELY(hot_line.profiling);
}

// Adds one duration, in cycle-counter ticks; the two unpin_latency parts
// take ns (the cache stamps invalidations in ns).
void profile_add(ProfilePart part, uint64_t ticks);

// Times its scope into `part` while profiling.
class ProfileTimer {
public:
    explicit ProfileTimer(ProfilePart part)
        : part_(part), start_(profiling() ? read_cycle_counter() : 0)
    {}
    ~ProfileTimer() { stop(); }
    // Ends the span before the scope does.
    void stop()
    {
        if (GDRHOOK_UNLIKELY(start_ != 0))
            profile_add(part_, read_cycle_counter() - start_);
        start_ = 0;
    }
    // Ends the span without counting it.
    void discard() { start_ = 0; }
    ProfileTimer(const ProfileTimer &) = delete;
    ProfileTimer &operator=(const ProfileTimer &) = delete;

private:
    ProfilePart part_;
    uint64_t start_;
};

// A ProfileTimer only in the copy of a function compiled with `Timed`.
// The allocation and free paths are compiled twice (recorder.cpp): the
// copy every unprofiled process runs has no timer at all. Even off, a
// timer is a branch, a counter read kept live across its span and the
// registers that read takes: six of the 38 code lines a pair touched
// (tests/bench/hot_lines.py), and on a GPU those lines are most of what
// a pair costs (hot_path.h).
template <bool Timed> class ProfileTimerIf : public ProfileTimer {
public:
    using ProfileTimer::ProfileTimer;
};

template <> class ProfileTimerIf<false> {
public:
    explicit ProfileTimerIf(ProfilePart) {}
};

// What one part's histogram says, in ticks.
struct ProfileSummary {
    ProfilePart part;
    uint64_t count = 0;
    uint64_t sum = 0;
    uint64_t p50 = 0, p99 = 0, max = 0;
};

// Every part timed at least once.
std::vector<ProfileSummary> profile_summaries();

// One line a part, durations in ns given the counter's ticks a millisecond.
std::vector<std::string> profile_report(uint64_t ticks_per_ms);

// The histogram's buckets, public for their test: a value's bucket, and
// the value a bucket reports (the middle of its range).
size_t profile_bucket(uint64_t ticks);
uint64_t profile_bucket_value(size_t bucket);

} // namespace gdrhook
