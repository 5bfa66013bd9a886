// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/event_clock.h"

#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gdrhook {

GDRHOOK_HOT_DATA bool event_clock_counts_tsc = false;

namespace {

// A TSC reading and CLOCK_MONOTONIC_RAW at about the same instant. RAW,
// not REALTIME: the kernel derives it from the TSC at a fixed rate, so the
// ratio of two such pairs is the TSC's rate whatever NTP or settimeofday
// do to wall time in between.
struct TscPair {
    uint64_t tsc = 0;
    uint64_t raw_ns = 0;
};
TscPair reference;

uint64_t raw_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

#if defined(__x86_64__)
TscPair now_raw()
{
    TscPair pair;
    pair.tsc = __rdtsc();
    pair.raw_ns = raw_ns();
    pair.tsc += (__rdtsc() - pair.tsc) / 2;
    return pair;
}

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
#endif

} // namespace

void start_event_clock(bool allow_tsc)
{
    event_clock_counts_tsc = false;
#if defined(__x86_64__)
    if (!allow_tsc || !tsc_is_invariant() || !kernel_keeps_time_with_tsc())
        return;
    reference = now_raw();
    event_clock_counts_tsc = true;
#else
    (void)allow_tsc;
#endif
}

uint64_t event_realtime_ns(const Event &event)
{
#if defined(__x86_64__)
    if (!event.tsc)
        return event.ts_ns;
    // Now, as wall time and RAW time each paired with the TSC midway
    // through its read; the event is `now - age`, its age measured in TSC
    // ticks at the rate seen since the reference. The rate's error is the
    // clocks' read jitter over the time since the reference, and an event
    // is younger than that: the error stays within that jitter (tens of ns).
    const TscPair raw = now_raw();
    uint64_t wall_tsc = __rdtsc();
    const uint64_t wall = realtime_ns();
    wall_tsc += (__rdtsc() - wall_tsc) / 2;
    if (wall_tsc <= event.tsc || raw.tsc <= reference.tsc || raw.raw_ns <= reference.raw_ns)
        return wall; // same instant (or a counter a few ticks apart across CPUs)
    const double ns_per_tick = static_cast<double>(raw.raw_ns - reference.raw_ns) /
                               static_cast<double>(raw.tsc - reference.tsc);
    const auto age_ns = static_cast<uint64_t>(static_cast<double>(wall_tsc - event.tsc) * ns_per_tick);
    return age_ns < wall ? wall - age_ns : 0;
#else
    return event.ts_ns;
#endif
}

} // namespace gdrhook
