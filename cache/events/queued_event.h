// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An Event as it travels through the queue: 56 bytes, so that with the
// cell's sequence word it fills exactly one cache line. Each push then
// moves one line from the worker's core to the application's instead of
// two, which is most of what the shim costs an application that allocates
// at a GPU's pace (an alloc/free pair every ~80 us finds the lines cold).
//
// The static strings (api, msg, backend) are kept as 32-bit offsets from
// an anchor in this library: every such string is a literal of the same
// binary, and a binary's code and data span less than 2 GiB. Events the
// compact form cannot hold (a consumer's unpin with its delay and reason,
// a sample, a device ordinal beyond int8, a string from elsewhere) are not
// squeezed: pack() refuses them and the pipeline hands them over whole.
#pragma once

#include "cache/events/event.h"
#include "cache/prim/hot_path.h"

#include <climits>
#include <cstdint>

namespace gdrhook {

struct QueuedEvent {
    uint64_t time; // Event::tsc with its top bit set, or Event::ts_ns
    uint64_t addr;
    uint64_t size;
    uint64_t entry_id; // Event::entry_id
    int32_t api;       // offsets of static strings, see above
    int32_t msg;
    int32_t tid;     // between msg and backend: two null texts side by side
    int32_t backend; // make a 64-bit constant the hot path loads from memory
    int32_t rc;
    int8_t dev;
    EventKind kind;
    Via via;
    MemoryKind mem;
};
static_assert(sizeof(QueuedEvent) == 56, "one cache line with the queue's sequence word");

// False when the event does not fit the compact form; `out` is then unset.
bool pack(const Event &event, QueuedEvent &out);

// The pieces of the compact form, for the recorder, which builds the
// events of allocations and frees in it directly (recorder.h).
inline constexpr uint64_t queued_time_is_tsc = 1ull << 63; // time: TSC, else realtime ns
inline constexpr int32_t queued_null_text = INT32_MIN;
extern const char queued_text_anchor[] __attribute__((visibility("hidden")));

// An event's time from its queued form (queued_time_now(), event_clock.h),
// replacing any it had.
inline void set_time_from_queued(Event &event, uint64_t queued_time)
{
    const bool tsc = queued_time & queued_time_is_tsc;
    event.tsc = tsc ? queued_time & ~queued_time_is_tsc : 0;
    event.ts_ns = tsc ? 0 : queued_time;
}

// A static string as its offset from the anchor; false if out of reach.
inline bool queued_text(const char *text, int32_t &out)
{
    if (!text) {
        out = queued_null_text;
        return true;
    }
    const intptr_t offset =
        reinterpret_cast<intptr_t>(text) - reinterpret_cast<intptr_t>(queued_text_anchor);
    if (GDRHOOK_UNLIKELY(offset <= INT32_MIN || offset > INT32_MAX))
        return false;
    out = static_cast<int32_t>(offset);
    return true;
}

// The fields an Event and the recorder's RecordedEvent (recorder.h) share,
// copied into the queued form: the one place that lays them out, for
// pack() and for the recorder's hot path alike (inlined there). The
// caller checks `source.dev` fits 8 bits and sets time, handle and texts.
template <typename Source> inline void pack_shared_fields(const Source &source, QueuedEvent &out)
{
    out.addr = source.addr;
    out.size = source.size;
    out.tid = source.tid;
    out.rc = source.rc;
    out.dev = static_cast<int8_t>(source.dev);
    out.kind = source.kind;
    out.via = source.via;
    out.mem = source.mem;
}

// Holds the place of an event handed over whole (see EventPipeline::submit).
QueuedEvent placeholder();
bool is_placeholder(const QueuedEvent &queued);

Event unpack(const QueuedEvent &queued, uint64_t seq);

} // namespace gdrhook
