// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// When an event happened, read on the application's thread.
//
// clock_gettime is a vDSO call that reads the kernel's clock page: libc's
// wrapper, the vDSO's code and its data are three pages that the driver,
// ~100 us in the kernel per allocation, has pushed out of the TLB by the
// next call (tests/gpu/alloc_free_ab: ~100 ns of the shim's cost per
// alloc/free pair). Where the CPU's counter keeps the kernel's time
// (cache/prim/cycle_counter.h: the invariant TSC on x86-64, CNTVCT_EL0 on
// aarch64), an event carries the counter, one instruction that touches no
// memory, and whoever writes the line turns it into CLOCK_REALTIME.
// Elsewhere events carry CLOCK_REALTIME as they always did. "TSC" in the
// names below means that counter on either architecture.
#pragma once

#include "cache/base/clock.h"
#include "cache/events/event.h"
#include "cache/events/queued_event.h"
#include "cache/prim/cycle_counter.h"
#include "cache/prim/hot_line.h"
#include "cache/prim/hot_path.h"

namespace gdrhook {

// Whether events carry the TSC: decided once, by start_event_clock(); read
// on every event.
inline bool event_clock_counts_tsc()
{
    return hot_line.event_clock_counts_tsc;
}

// Decides whether events carry the TSC and takes the reference that turns
// it into wall time. The runtime calls it as it initializes; tests call it
// again to force a mode (`allow_tsc` false: CLOCK_REALTIME always).
void start_event_clock(bool allow_tsc = true);

// Sets event.tsc (TSC mode) or event.ts_ns (otherwise) to now.
inline void stamp_now(Event &event)
{
    if (event_clock_counts_tsc()) {
        event.tsc = read_cycle_counter();
        event.ts_ns = 0;
        return;
    }
    event.tsc = 0;
    event.ts_ns = realtime_ns();
}

// The same stamp in the form an event has in the queue (queued_event.h).
inline uint64_t queued_time_now()
{
    if (event_clock_counts_tsc())
        return read_cycle_counter() | queued_time_is_tsc;
    return realtime_ns();
}

// The TSC's rate: as the event clock measured it since it started
// (x86-64), CNTFRQ_EL0 (aarch64); 0 when events do not carry the TSC.
uint64_t event_clock_tsc_hz();

// An event stamped now, with the calling thread's id.
Event make_event(EventKind kind, const char *api, Via via, MemoryKind mem, uint64_t addr,
                 uint64_t size);

// CLOCK_REALTIME in ns of an event: its ts_ns, or its TSC converted.
uint64_t event_realtime_ns(const Event &event);

} // namespace gdrhook
