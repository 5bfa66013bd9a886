// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/record/graph_release.h"

#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/events/thread_state.h"
#include "cache/notify/free_subscribers.h"
#include "cache/prim/hot_line.h"
#include "cache/record/alloc_tracker.h"
#include "cache/record/recorder.h"

namespace gdrhook {

void record_graph_alloc(GraphMemory &graphs, const char *api, Via via, uint64_t graph,
                        uint64_t addr, uint64_t size, int rc)
{
    record_alloc(api, via, MemoryKind::graph, addr, size, rc);
    if (rc == 0 && runtime_running())
        note_captured_graph_alloc(graphs, graph, addr, size);
}

void note_captured_graph_alloc(GraphMemory &graphs, uint64_t graph, uint64_t addr, uint64_t size)
{
    // Tracked as a pool allocation (recorder.cpp), with its device.
    auto tracked = hot_line.tracker->find(MemoryKind::pool, addr);
    graphs.allocated(graph, GraphRange{addr, size, tracked ? tracked->dev : -1});
}

void note_freed_in_graph(GraphMemory &graphs, uint64_t addr)
{
    graphs.freed_in_graph(addr);
}

GraphReleaseTicket begin_graph_release(const char *api, Via via, uint64_t handle, int32_t dev,
                                       std::vector<GraphRange> ranges, bool deallocation)
{
    GraphReleaseTicket ticket;
    if (!runtime_running())
        return ticket;
    ticket.active = true;
    ticket.logged = deallocation;
    uint64_t bytes = 0;
    for (const GraphRange &r : ranges)
        bytes += r.size;
    ticket.event = make_event(EventKind::free, api, via, MemoryKind::graph, handle, bytes);
    ticket.event.dev = dev;
    // Before the real call: once it returns the memory or the address can
    // be another allocation's.
    if (anyone_listens_to_frees())
        for (const GraphRange &r : ranges)
            tell_before_free(MemoryKind::graph, r.addr, r.size);
    ticket.ranges = std::move(ranges);
    return ticket;
}

void end_graph_release(GraphReleaseTicket &ticket, int rc)
{
    if (!ticket.active)
        return;
    ticket.event.rc = rc;
    if (rc == 0 && anyone_listens_to_frees()) {
        // A lookup racing the call may have pinned in between (recorder.h).
        const FreeClocks clocks = read_clocks_after_free();
        for (const GraphRange &r : ticket.ranges)
            tell_after_free(MemoryKind::graph, r.addr, r.size, clocks);
    }
    if (ticket.logged) {
        ++hot_thread_state().events_recorded;
        hot_line.pipeline->submit(ticket.event);
    }
}

} // namespace gdrhook
