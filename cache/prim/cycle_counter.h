// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The CPU's own counter, read in one instruction that touches no memory:
// what an event carries instead of a vDSO call (cache/events/event_clock.h).
// The only place that knows which instruction that is; the rest of the tree
// calls read_cycle_counter() and says "the TSC" for either.
//
//  x86-64   the time-stamp counter (RDTSC). Its rate is not architectural:
//           the event clock measures it against CLOCK_MONOTONIC_RAW, and
//           trusts the counter only where it is invariant and the kernel
//           itself keeps time with it (clocksource "tsc").
//  aarch64  the generic timer's virtual count (CNTVCT_EL0), its rate in
//           CNTFRQ_EL0. The architecture requires one system-wide counter
//           of constant rate that never goes back, and it is the kernel's
//           own clocksource (arch_sys_counter) on every arm64 Linux; on the
//           few parts whose counter has an erratum Linux traps EL0 reads
//           and answers them correctly. So it is always usable, and its
//           rate is the register's, not a measurement.
//
// Neither read is ordered against the instructions around it (no LFENCE,
// no ISB): an event's stamp may be taken a few cycles early, which the
// ordering of a thread's events (its program order, kept by the queue)
// does not depend on.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#elif !defined(__aarch64__)
#error "gdrhook supports x86-64 and aarch64 (cache/prim/cycle_counter.h)"
#endif

namespace gdrhook {

#if defined(__x86_64__)
// As the process line's clock anchor names it (docs/log-format.md).
inline constexpr const char cycle_counter_name[] = "tsc";

inline uint64_t read_cycle_counter()
{
    return __rdtsc();
}

// 0: the rate is not architectural; measure it.
inline uint64_t cycle_counter_nominal_hz()
{
    return 0;
}
#else
inline constexpr const char cycle_counter_name[] = "cntvct";

inline uint64_t read_cycle_counter()
{
    uint64_t count;
    asm volatile("mrs %0, cntvct_el0" : "=r"(count));
    return count;
}

inline uint64_t cycle_counter_nominal_hz()
{
    uint64_t hz;
    asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
    return hz;
}
#endif

// Whether the kernel vouches for the counter: constant rate, synchronized
// across CPUs (the conditions above), given the kernel's current
// clocksource as /sys names it ("tsc"; aarch64 needs none). The caller
// reads it: the primitives sit below every folder that opens files.
bool cycle_counter_keeps_time(const char *kernel_clocksource);

} // namespace gdrhook
