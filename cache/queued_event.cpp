// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/queued_event.h"

#include <climits>

namespace gdrhook {
namespace {

// Offsets are taken from here; INT32_MIN stands for a null pointer.
const char anchor[] = "";
constexpr int32_t null_offset = INT32_MIN;
// Not an EventKind any event has.
constexpr auto placeholder_kind = static_cast<EventKind>(UINT8_MAX);
// Neither a TSC reading (2^63 ticks are a century at 3 GHz) nor ns since
// 1970 (until 2262) has the top bit set.
constexpr uint64_t time_is_tsc = 1ull << 63;

bool to_offset(const char *text, int32_t &out)
{
    if (!text) {
        out = null_offset;
        return true;
    }
    intptr_t offset = reinterpret_cast<intptr_t>(text) - reinterpret_cast<intptr_t>(anchor);
    if (offset <= INT32_MIN || offset > INT32_MAX)
        return false;
    out = static_cast<int32_t>(offset);
    return true;
}

const char *from_offset(int32_t offset)
{
    return offset == null_offset ? nullptr : anchor + offset;
}

} // namespace

bool pack(const Event &event, QueuedEvent &out)
{
    if (event.lat_ns || event.reason || event.sample || event.dev < INT8_MIN ||
        event.dev > INT8_MAX)
        return false;
    if (!to_offset(event.api, out.api) || !to_offset(event.msg, out.msg) ||
        !to_offset(event.backend, out.backend))
        return false;
    if ((event.tsc | event.ts_ns) & time_is_tsc)
        return false;
    out.time = event.tsc ? event.tsc | time_is_tsc : event.ts_ns;
    out.addr = event.addr;
    out.size = event.size;
    out.handle = event.handle;
    out.tid = event.tid;
    out.rc = event.rc;
    out.dev = static_cast<int8_t>(event.dev);
    out.kind = event.kind;
    out.via = event.via;
    out.mem = event.mem;
    return true;
}

QueuedEvent placeholder()
{
    QueuedEvent queued{};
    queued.kind = placeholder_kind;
    return queued;
}

bool is_placeholder(const QueuedEvent &queued)
{
    return queued.kind == placeholder_kind;
}

Event unpack(const QueuedEvent &queued, uint64_t seq)
{
    Event event;
    if (queued.time & time_is_tsc)
        event.tsc = queued.time & ~time_is_tsc;
    else
        event.ts_ns = queued.time;
    event.seq = seq;
    event.addr = queued.addr;
    event.size = queued.size;
    event.handle = queued.handle;
    event.api = from_offset(queued.api);
    event.msg = from_offset(queued.msg);
    event.backend = from_offset(queued.backend);
    event.tid = queued.tid;
    event.rc = queued.rc;
    event.dev = queued.dev;
    event.kind = queued.kind;
    event.via = queued.via;
    event.mem = queued.mem;
    return event;
}

} // namespace gdrhook
