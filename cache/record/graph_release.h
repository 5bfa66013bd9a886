// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the calls that make and release graph memory mean (graph_memory.h
// says what the host can know of it), called by the hook around each:
//
//   allocation node:  real call  ->  record_graph_alloc (an `alloc` of
//                     kind graph, tracked as a pool allocation)
//   captured stream-ordered allocation: record_alloc, then
//                     note_captured_graph_alloc (which graph owns it)
//   free node:        a free (recorder.h), then note_freed_in_graph
//   trim, destroying a graph or an executable graph:
//                     begin_graph_release (invalidate the ranges it may
//                     release)  ->  real call  ->  end_graph_release
//                     (invalidate again, log one `free` of kind graph)
#pragma once

#include "cache/events/event.h"
#include "cache/record/graph_memory.h"

#include <cstdint>
#include <vector>

namespace gdrhook {

void record_graph_alloc(GraphMemory &graphs, const char *api, Via via, uint64_t graph,
                        uint64_t addr, uint64_t size, int rc);
void note_captured_graph_alloc(GraphMemory &graphs, uint64_t graph, uint64_t addr, uint64_t size);
void note_freed_in_graph(GraphMemory &graphs, uint64_t addr);

struct GraphReleaseTicket {
    Event event;
    std::vector<GraphRange> ranges;
    bool logged = false; // a deallocation: one `free` event
    bool active = false;
};

// `handle` is the graph or executable graph (0 for a trim), `ranges` what
// the call may release; `deallocation` false when the call releases no
// graph memory we know of (then nothing is logged).
GraphReleaseTicket begin_graph_release(const char *api, Via via, uint64_t handle, int32_t dev,
                                       std::vector<GraphRange> ranges, bool deallocation);
void end_graph_release(GraphReleaseTicket &ticket, int rc);

} // namespace gdrhook
