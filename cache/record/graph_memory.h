// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the process's graphs own, as far as the host can know it. CUDA gives
// a graph allocation its address when the node is made (a cuMemAllocAsync
// on a capturing stream, or cuGraphAddMemAllocNode), and the address stays
// the graph's while the graph lives. An allocation freed inside the graph
// (a free node, or a captured cuMemFreeAsync) lives only inside each
// launch, on the GPU's schedule; the memory behind it stays mapped between
// launches until cuDeviceGraphMemTrim or the destruction of the executable
// graph gives it back, and its address goes with the graph. One not freed
// in the graph outlives it and ends as any device allocation does.
//
// So a registration over graph memory can go stale without a host call at
// its own address: these are the ranges the recorder (graph_release.h)
// invalidates at a trim and at each destruction. Not on the hot path: a
// mutex guards it.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gdrhook {

struct GraphRange {
    uint64_t addr = 0;
    uint64_t size = 0;
    int32_t dev = -1;
};

// What destroying a graph releases.
struct GraphRelease {
    bool owned_allocations = false; // the graph made any (else: not a deallocation)
    std::vector<GraphRange> ranges; // those freed inside it: their addresses go
};

class GraphMemory {
public:
    // `graph` (0 when unknown) made an allocation node for `range`.
    void allocated(uint64_t graph, const GraphRange &range);
    // A free node for the allocation at addr: it ends inside each launch.
    // False when addr is no graph allocation we know.
    bool freed_in_graph(uint64_t addr);

    // The allocations freed inside a graph, of every graph on `dev` (-1:
    // every device): what a trim may unmap, and what the destruction of an
    // executable graph gives back (which graph it was made from is not seen).
    std::vector<GraphRange> ranges_freed_in_graphs(int32_t dev) const;
    // What destroying `graph` releases; forget() it once it is destroyed.
    GraphRelease release_of(uint64_t graph) const;
    void forget(uint64_t graph);

    // In a forked child: the mutex may have been held by a thread that does
    // not exist there.
    void reinitialize_lock_after_fork();

private:
    struct Allocation {
        GraphRange range;
        bool freed_in_graph = false;
    };
    mutable std::mutex lock_;
    std::unordered_map<uint64_t, std::vector<Allocation>> by_graph_;
    std::unordered_map<uint64_t, uint64_t> graph_of_addr_;
};

} // namespace gdrhook
