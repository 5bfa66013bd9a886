// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/queued_event.h"

#include <climits>

namespace gdrhook {

const char queued_text_anchor[] = "";

namespace {

constexpr auto placeholder_kind = static_cast<EventKind>(UINT8_MAX);

const char *from_offset(int32_t offset)
{
    return offset == queued_null_text ? nullptr : queued_text_anchor + offset;
}

} // namespace

bool pack(const Event &event, QueuedEvent &out)
{
    if (event.lat_ns || event.reason || event.sample || event.queries || event.dev < INT8_MIN ||
        event.dev > INT8_MAX)
        return false;
    if (!queued_text(event.api, out.api) || !queued_text(event.msg, out.msg) ||
        !queued_text(event.backend, out.backend))
        return false;
    if ((event.tsc | event.ts_ns) & queued_time_is_tsc)
        return false;
    out.time = event.tsc ? event.tsc | queued_time_is_tsc : event.ts_ns;
    out.entry_id = event.entry_id;
    pack_shared_fields(event, out);
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
    set_time_from_queued(event, queued.time);
    event.seq = seq;
    event.addr = queued.addr;
    event.size = queued.size;
    event.entry_id = queued.entry_id;
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
