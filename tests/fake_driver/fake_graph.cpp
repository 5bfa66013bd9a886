// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Graph memory in the fake driver, as CUDA documents it for the real one:
// a graph allocation (a cuMemAllocAsync on a capturing stream, or
// cuGraphAddMemAllocNode) gets its address when the node is made, and that
// address stays the graph's for the graph's life. Memory backs it from the
// first launch; one freed inside the graph (a free node, or a captured
// cuMemFreeAsync) stays mapped between launches until cuDeviceGraphMemTrim
// or the destruction of the executable graph unmaps it, and its address is
// given back when the graph is destroyed. One not freed in the graph
// outlives it, until cuMemFree or cuMemFreeAsync. An export (dma-buf) of
// graph memory holds the memory, as any export does (fake_dmabuf.cpp).
#include "fake_state.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace fake;

namespace {

// driver().mutex
std::set<CUgraph> &graphs()
{
    static auto *set = new std::set<CUgraph>();
    return *set;
}
std::map<CUgraphExec, CUgraph> &executables()
{
    static auto *map = new std::map<CUgraphExec, CUgraph>();
    return *map;
}

// Calls f(address, allocation) for each live allocation of `graph` (every
// graph's where graph is null); mutex held.
template <typename F> void for_each_allocation_of(CUgraph graph, F &&f)
{
    for (auto &entry : driver().live)
        if (entry.second.graph && entry.second.owner && (!graph || entry.second.owner == graph))
            f(entry.first, entry.second);
}

// The memory of allocations that end inside their graph's launches goes
// back (to the device's graph pool, or to the system at a trim).
void unmap_freed_in_graph(CUgraph graph)
{
    for_each_allocation_of(graph, [](uintptr_t, Allocation &a) {
        if (a.freed_in_graph)
            a.mapped = false;
    });
}

} // namespace

namespace fake {

bool host_dmabuf_supported()
{
    static const bool supported = env_is_one("FAKECUDA_HOST_DMABUF");
    return supported;
}

CUgraph create_graph()
{
    auto graph = reinterpret_cast<CUgraph>(new int(0));
    std::lock_guard<std::mutex> lock(driver().mutex);
    graphs().insert(graph);
    return graph;
}

void discard_graph(CUgraph graph)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    graphs().erase(graph);
    delete reinterpret_cast<int *>(graph);
}

void note_graph_allocation(uintptr_t addr, CUgraph graph)
{
    Allocation &a = driver().live[addr];
    a.graph = true;
    a.mapped = false;
    a.owner = graph;
}

bool free_in_graph(uintptr_t addr)
{
    auto it = driver().live.find(addr);
    if (it == driver().live.end() || !it->second.graph || it->second.freed_in_graph)
        return false;
    it->second.freed_in_graph = true;
    return true;
}

} // namespace fake

extern "C" {

CUresult cuGraphCreate(CUgraph *graph, unsigned int)
{
    if (CUresult injected = count_call("cuGraphCreate"))
        return injected;
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = create_graph();
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *, size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
    if (CUresult injected = count_call("cuGraphAddMemAllocNode"))
        return injected;
    if (!node || !params || !params->bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!graphs().count(graph))
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t addr = allocate_block(params->bytesize, false);
    if (!addr)
        return CUDA_ERROR_OUT_OF_MEMORY;
    note_graph_allocation(addr, graph);
    params->dptr = addr;
    *node = reinterpret_cast<CUgraphNode>(addr); // stands for the node; never dereferenced
    return CUDA_SUCCESS;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *, size_t,
                               CUdeviceptr dptr)
{
    if (CUresult injected = count_call("cuGraphAddMemFreeNode"))
        return injected;
    if (!node)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!graphs().count(graph) || !free_in_graph(dptr))
        return CUDA_ERROR_INVALID_VALUE; // not a graph allocation, or freed twice
    *node = reinterpret_cast<CUgraphNode>(dptr + 1);
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long)
{
    if (CUresult injected = count_call("cuGraphInstantiateWithFlags"))
        return injected;
    if (!exec)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!graphs().count(graph))
        return CUDA_ERROR_INVALID_VALUE;
    *exec = reinterpret_cast<CUgraphExec>(new int(0));
    executables()[*exec] = graph;
    return CUDA_SUCCESS;
}

// The fake runs nothing on launch: it maps the graph's allocations, as the
// real driver does before the GPU reaches an allocation node.
CUresult cuGraphLaunch(CUgraphExec exec, CUstream)
{
    if (CUresult injected = count_call("cuGraphLaunch"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    auto it = executables().find(exec);
    if (it == executables().end())
        return CUDA_ERROR_INVALID_VALUE;
    for_each_allocation_of(it->second, [](uintptr_t, Allocation &a) { a.mapped = true; });
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    if (CUresult injected = count_call("cuGraphExecDestroy"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    auto it = executables().find(exec);
    if (it == executables().end())
        return CUDA_ERROR_INVALID_VALUE;
    if (graphs().count(it->second))
        unmap_freed_in_graph(it->second);
    executables().erase(it);
    delete reinterpret_cast<int *>(exec);
    return CUDA_SUCCESS;
}

// Addresses freed inside the graph are given back; allocations the graph
// did not free outlive it, until cuMemFree or cuMemFreeAsync.
CUresult cuGraphDestroy(CUgraph graph)
{
    if (CUresult injected = count_call("cuGraphDestroy"))
        return injected;
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (!graphs().erase(graph))
        return CUDA_ERROR_INVALID_VALUE;
    std::vector<uintptr_t> released;
    for_each_allocation_of(graph, [&](uintptr_t addr, Allocation &a) {
        if (a.freed_in_graph)
            released.push_back(addr);
        else
            a.owner = nullptr; // outlives the graph, as plain device memory
    });
    for (uintptr_t addr : released)
        release_block(addr);
    delete reinterpret_cast<int *>(graph);
    return CUDA_SUCCESS;
}

// Unmaps the memory of every allocation no launch is using (the fake runs
// no launch: all that end inside their graph).
CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    if (CUresult injected = count_call("cuDeviceGraphMemTrim"))
        return injected;
    if (device < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    unmap_freed_in_graph(nullptr);
    return CUDA_SUCCESS;
}

} // extern "C"
