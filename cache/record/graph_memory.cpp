// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/record/graph_memory.h"

#include <new>

namespace gdrhook {

void GraphMemory::allocated(uint64_t graph, const GraphRange &range)
{
    std::lock_guard<std::mutex> guard(lock_);
    by_graph_[graph].push_back(Allocation{range, false});
    graph_of_addr_[range.addr] = graph;
}

bool GraphMemory::freed_in_graph(uint64_t addr)
{
    std::lock_guard<std::mutex> guard(lock_);
    auto owner = graph_of_addr_.find(addr);
    if (owner == graph_of_addr_.end())
        return false;
    auto graph = by_graph_.find(owner->second);
    if (graph == by_graph_.end())
        return false;
    for (Allocation &a : graph->second)
        if (a.range.addr == addr)
            a.freed_in_graph = true;
    return true;
}

std::vector<GraphRange> GraphMemory::ranges_freed_in_graphs(int32_t dev) const
{
    std::lock_guard<std::mutex> guard(lock_);
    std::vector<GraphRange> ranges;
    for (const auto &graph : by_graph_)
        for (const Allocation &a : graph.second)
            if (a.freed_in_graph && (dev < 0 || a.range.dev < 0 || a.range.dev == dev))
                ranges.push_back(a.range);
    return ranges;
}

GraphRelease GraphMemory::release_of(uint64_t graph) const
{
    std::lock_guard<std::mutex> guard(lock_);
    GraphRelease release;
    auto found = by_graph_.find(graph);
    if (found == by_graph_.end())
        return release;
    release.owned_allocations = !found->second.empty();
    for (const Allocation &a : found->second)
        if (a.freed_in_graph)
            release.ranges.push_back(a.range);
    return release;
}

void GraphMemory::forget(uint64_t graph)
{
    std::lock_guard<std::mutex> guard(lock_);
    auto found = by_graph_.find(graph);
    if (found == by_graph_.end())
        return;
    for (const Allocation &a : found->second) {
        auto owner = graph_of_addr_.find(a.range.addr);
        if (owner != graph_of_addr_.end() && owner->second == graph)
            graph_of_addr_.erase(owner);
    }
    by_graph_.erase(found);
}

void GraphMemory::reinitialize_lock_after_fork()
{
    new (&lock_) std::mutex();
}

} // namespace gdrhook
