// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_clock.h"

#include "cache/events/thread_state.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gdrhook {

#if defined(__x86_64__)
namespace {

// A clock's reading and the TSC midway through taking it.
struct TscPair {
    uint64_t tsc = 0;
    uint64_t ns = 0;
};

template <typename Clock>
TscPair read_with_tsc(Clock clock)
{
    TscPair pair;
    pair.tsc = __rdtsc();
    pair.ns = clock();
    pair.tsc += (__rdtsc() - pair.tsc) / 2;
    return pair;
}

// CLOCK_MONOTONIC_RAW, not REALTIME, gives the TSC's rate: the kernel
// derives it from the TSC at a fixed rate, so the ratio of two such pairs
// is the TSC's rate whatever NTP or settimeofday do to wall time between.
uint64_t raw_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

TscPair reference; // RAW time, taken as the clock starts

bool tsc_is_invariant()
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx))
        return false;
    return edx & (1u << 8); // "Invariant TSC": constant rate, runs in deep C-states
}

// The kernel checks at boot (and keeps checking) that the TSC is synchronized
// across CPUs and stable; if it found otherwise it switched to another
// clocksource. Events stamped on different CPUs are compared, so trust the
// counter only where the kernel does.
bool kernel_keeps_time_with_tsc()
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f)
        return false;
    char name[32] = {};
    bool tsc = fgets(name, sizeof name, f) && strcmp(name, "tsc\n") == 0;
    fclose(f);
    return tsc;
}

// The line from the TSC to wall time: wall time at one TSC reading, and
// the TSC's rate seen since the reference. Between two anchors every event
// lies on one line, so a thread's events keep their order; an anchor is
// taken afresh once events are newer than it by a sixteenth of the
// rate's baseline (the rate's error then moves an event by a sixteenth of
// the clocks' read jitter at most) or by 50 ms (wall time follows NTP and
// clock steps). Each converting thread has its own: no lock, fork-safe.
struct Anchor {
    TscPair wall;
    double ns_per_tick = 0;
    uint64_t lifetime_ticks = 0;
};
GDRHOOK_THREAD_LOCAL Anchor anchor;
constexpr uint64_t anchor_lifetime_ns = 50'000'000;

Anchor take_anchor()
{
    const TscPair raw = read_with_tsc(raw_ns);
    Anchor fresh;
    fresh.wall = read_with_tsc(realtime_ns);
    if (raw.tsc <= reference.tsc || raw.ns <= reference.ns)
        return fresh; // no baseline yet: every event is "now" (lifetime 0)
    const uint64_t baseline_ns = raw.ns - reference.ns;
    fresh.ns_per_tick = static_cast<double>(baseline_ns) /
                        static_cast<double>(raw.tsc - reference.tsc);
    const uint64_t lifetime_ns = std::min(anchor_lifetime_ns, baseline_ns / 16);
    fresh.lifetime_ticks = static_cast<uint64_t>(static_cast<double>(lifetime_ns) / fresh.ns_per_tick);
    return fresh;
}

} // namespace
#endif

void start_event_clock(bool allow_tsc)
{
    hot_line.event_clock_counts_tsc = false;
#if defined(__x86_64__)
    if (!allow_tsc || !tsc_is_invariant() || !kernel_keeps_time_with_tsc())
        return;
    reference = read_with_tsc(raw_ns);
    hot_line.event_clock_counts_tsc = true;
#else
    (void)allow_tsc;
#endif
}

uint64_t event_realtime_ns(const Event &event)
{
#if defined(__x86_64__)
    if (!event.tsc)
        return event.ts_ns;
    if (!anchor.ns_per_tick || event.tsc > anchor.wall.tsc + anchor.lifetime_ticks) {
        anchor = take_anchor();
        if (!anchor.ns_per_tick)
            return anchor.wall.ns;
    }
    // Older events (a backlog) lie on the same line, before the anchor.
    // In integers but the offset: a double holds ns since 1970 only to
    // within 256 ns.
    const auto ticks = static_cast<int64_t>(event.tsc - anchor.wall.tsc);
    const auto offset_ns = static_cast<int64_t>(static_cast<double>(ticks) * anchor.ns_per_tick);
    return anchor.wall.ns + static_cast<uint64_t>(offset_ns);
#else
    return event.ts_ns;
#endif
}

uint64_t event_clock_tsc_hz()
{
#if defined(__x86_64__)
    if (!hot_line.event_clock_counts_tsc)
        return 0;
    const TscPair now = read_with_tsc(raw_ns);
    if (now.tsc <= reference.tsc || now.ns <= reference.ns)
        return 0;
    return static_cast<uint64_t>(static_cast<double>(now.tsc - reference.tsc) * 1e9 /
                                 static_cast<double>(now.ns - reference.ns));
#else
    return 0;
#endif
}

Event make_event(EventKind kind, const char *api, Via via, MemoryKind mem, uint64_t addr,
                 uint64_t size)
{
    Event event;
    stamp_now(event);
    event.tid = current_tid();
    event.kind = kind;
    event.api = api;
    event.via = via;
    event.mem = mem;
    event.addr = addr;
    event.size = size;
    return event;
}

} // namespace gdrhook
