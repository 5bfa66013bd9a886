// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/event_clock.h"

#include "cache/base/safe_file.h"
#include "cache/events/thread_state.h"

#include <algorithm>

namespace gdrhook {

namespace {

// A clock's reading and the TSC midway through taking it.
struct TscPair {
    uint64_t tsc = 0;
    uint64_t ns = 0;
};

template <typename Clock> TscPair read_with_tsc(Clock clock)
{
    TscPair pair;
    pair.tsc = read_cycle_counter();
    pair.ns = clock();
    pair.tsc += (read_cycle_counter() - pair.tsc) / 2;
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

// The line from the TSC to wall time: wall time at one TSC reading, and
// the TSC's rate. Between two anchors every event lies on one line, so a
// thread's events keep their order; an anchor is taken afresh once events
// are newer than it by 50 ms (wall time follows NTP and clock steps) or,
// where the rate is measured (x86-64), by a sixteenth of the rate's
// baseline (the rate's error then moves an event by a sixteenth of the
// clocks' read jitter at most). Each converting thread has its own: no
// lock, fork-safe.
struct Anchor {
    TscPair wall;
    double ns_per_tick = 0;
    uint64_t lifetime_ticks = 0;
};
GDRHOOK_THREAD_LOCAL Anchor anchor;
constexpr uint64_t anchor_lifetime_ns = 50'000'000;

Anchor take_anchor()
{
    Anchor fresh;
    fresh.wall = read_with_tsc(realtime_ns);
    uint64_t lifetime_ns = anchor_lifetime_ns;
    if (const uint64_t nominal_hz = cycle_counter_nominal_hz()) {
        // aarch64: the kernel's clocks run at exactly this rate.
        fresh.ns_per_tick = 1e9 / static_cast<double>(nominal_hz);
    } else {
        const TscPair raw = read_with_tsc(raw_ns);
        if (raw.tsc <= reference.tsc || raw.ns <= reference.ns)
            return fresh; // no baseline yet: every event is "now" (lifetime 0)
        const uint64_t baseline_ns = raw.ns - reference.ns;
        fresh.ns_per_tick =
            static_cast<double>(baseline_ns) / static_cast<double>(raw.tsc - reference.tsc);
        lifetime_ns = std::min(lifetime_ns, baseline_ns / 16);
    }
    fresh.lifetime_ticks =
        static_cast<uint64_t>(static_cast<double>(lifetime_ns) / fresh.ns_per_tick);
    return fresh;
}

// The clocksource the kernel keeps time with ("tsc", "hpet", ...), or ""
// where /sys does not say.
std::string kernel_clocksource()
{
    Result<std::string> read =
        read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", 32);
    if (!read)
        return "";
    std::string &name = *read;
    if (!name.empty() && name.back() == '\n')
        name.pop_back();
    return name;
}

} // namespace

void start_event_clock(bool allow_tsc)
{
    hot_line.event_clock_counts_tsc = false;
    if (!allow_tsc || !cycle_counter_keeps_time(kernel_clocksource().c_str()))
        return;
    reference = read_with_tsc(raw_ns);
    hot_line.event_clock_counts_tsc = true;
}

uint64_t event_realtime_ns(const Event &event)
{
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
}

uint64_t event_clock_tsc_hz()
{
    if (!hot_line.event_clock_counts_tsc)
        return 0;
    if (const uint64_t nominal_hz = cycle_counter_nominal_hz())
        return nominal_hz;
    const TscPair now = read_with_tsc(raw_ns);
    if (now.tsc <= reference.tsc || now.ns <= reference.ns)
        return 0;
    return static_cast<uint64_t>(static_cast<double>(now.tsc - reference.tsc) * 1e9 /
                                 static_cast<double>(now.ns - reference.ns));
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
