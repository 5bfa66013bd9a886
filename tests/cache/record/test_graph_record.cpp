// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The record of what the process's graphs own (cache/record/graph_memory.h):
// which ranges a trim, an executable graph's and a graph's destruction may
// release.
#include "cache/record/graph_memory.h"

#include <catch2/catch.hpp>

using namespace gdrhook;

namespace {

std::vector<uint64_t> addresses(const std::vector<GraphRange> &ranges)
{
    std::vector<uint64_t> out;
    for (const GraphRange &r : ranges)
        out.push_back(r.addr);
    return out;
}

} // namespace

TEST_CASE("only allocations freed inside a graph are what trims release, per device")
{
    GraphMemory graphs;
    graphs.allocated(1, GraphRange{0x1000, 0x100, 0});
    graphs.allocated(1, GraphRange{0x2000, 0x100, 0});
    graphs.allocated(2, GraphRange{0x3000, 0x100, 1});
    CHECK(graphs.ranges_freed_in_graphs(-1).empty());
    CHECK(graphs.freed_in_graph(0x2000));
    CHECK(graphs.freed_in_graph(0x3000));
    CHECK_FALSE(graphs.freed_in_graph(0x4000)); // not graph memory
    CHECK(addresses(graphs.ranges_freed_in_graphs(0)) == std::vector<uint64_t>{0x2000});
    CHECK(addresses(graphs.ranges_freed_in_graphs(1)) == std::vector<uint64_t>{0x3000});
    CHECK(graphs.ranges_freed_in_graphs(-1).size() == 2);
}

TEST_CASE("a graph's destruction releases the addresses freed inside it, and it is forgotten")
{
    GraphMemory graphs;
    graphs.allocated(7, GraphRange{0x1000, 0x100, 0});
    graphs.allocated(7, GraphRange{0x2000, 0x200, 0});
    graphs.freed_in_graph(0x2000);
    GraphRelease release = graphs.release_of(7);
    CHECK(release.owned_allocations);
    CHECK(addresses(release.ranges) == std::vector<uint64_t>{0x2000});
    graphs.forget(7);
    CHECK_FALSE(graphs.release_of(7).owned_allocations);
    CHECK(graphs.ranges_freed_in_graphs(-1).empty());
    CHECK_FALSE(graphs.freed_in_graph(0x1000));          // forgotten with its graph
    CHECK_FALSE(graphs.release_of(8).owned_allocations); // a graph without memory
}

TEST_CASE("an address a later graph's node got again belongs to that graph")
{
    GraphMemory graphs;
    graphs.allocated(1, GraphRange{0x1000, 0x100, 0});
    graphs.allocated(2, GraphRange{0x1000, 0x100, 0});
    graphs.forget(1); // must not forget graph 2's claim on the address
    CHECK(graphs.freed_in_graph(0x1000));
    CHECK(addresses(graphs.release_of(2).ranges) == std::vector<uint64_t>{0x1000});
}
