// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Graph memory: the allocation and free nodes built by hand, and the calls
// that release graph memory (a trim, destroying a graph or an executable
// graph). Each wrapper calls the real function exactly once and returns
// its result unchanged; what the call means is decided in
// cache/record/graph_release.cpp.
#include "hook/graph_wrappers.h"

#include "cache/record/graph_release.h"
#include "hook/wrapper.h"

using namespace gdrhook;

namespace {

GraphMemory &graph_memory()
{
    return runtime().graph_memory;
}

uint64_t handle_u64(const void *handle)
{
    return reinterpret_cast<uint64_t>(handle);
}

template <typename Call>
CUresult graph_release(const char *api, uint64_t handle, int32_t dev,
                       std::vector<GraphRange> (*ranges)(uint64_t handle, int32_t dev,
                                                         bool &deallocation),
                       Call &&real_call)
{
    GraphReleaseTicket ticket;
    if (hook_enabled()) {
        bool deallocation = false;
        std::vector<GraphRange> released = ranges(handle, dev, deallocation);
        ticket =
            begin_graph_release(api, current_via(), handle, dev, std::move(released), deallocation);
    }
    CUresult rc = real_call();
    end_graph_release(ticket, rc);
    return rc;
}

// A trim gives back the memory of every allocation no launch uses: those
// freed inside their graph, on that device.
std::vector<GraphRange> trimmed(uint64_t, int32_t dev, bool &deallocation)
{
    deallocation = true;
    return graph_memory().ranges_freed_in_graphs(dev);
}

// The memory the executable graph's launches mapped goes back to the
// device. Which graph it was made from is not seen (instantiation is not
// interposed): every allocation freed inside a graph may be its.
std::vector<GraphRange> executable_released(uint64_t, int32_t, bool &deallocation)
{
    std::vector<GraphRange> ranges = graph_memory().ranges_freed_in_graphs(-1);
    deallocation = !ranges.empty();
    return ranges;
}

// The addresses of the allocations freed inside the graph go with it;
// those it did not free live on (CUDA's graph memory nodes).
std::vector<GraphRange> graph_released(uint64_t graph, int32_t, bool &deallocation)
{
    GraphRelease release = graph_memory().release_of(graph);
    deallocation = release.owned_allocations;
    return std::move(release.ranges);
}

} // namespace

namespace gdrhook {

void note_captured_allocation(CUstream stream, bool per_thread, CUresult rc,
                              const CUdeviceptr *dptr, size_t size)
{
    if (rc != CUDA_SUCCESS || !dptr || !runtime_running() || !hot_line.queries->capture_graph)
        return;
    if (uint64_t graph = hot_line.queries->capture_graph(handle_u64(stream), per_thread))
        note_captured_graph_alloc(graph_memory(), graph, *dptr, size);
}

void note_captured_free(CUstream stream, bool per_thread, CUresult rc, CUdeviceptr dptr)
{
    if (rc != CUDA_SUCCESS || !runtime_running() || !hot_line.queries->capture_graph)
        return;
    if (hot_line.queries->capture_graph(handle_u64(stream), per_thread))
        note_freed_in_graph(graph_memory(), dptr);
}

} // namespace gdrhook

GDRHOOK_WRAPPER(CUresult, cuGraphAddMemAllocNode,
                (CUgraphNode * node, CUgraph graph, const CUgraphNode *dependencies, size_t count,
                 CUDA_MEM_ALLOC_NODE_PARAMS *params))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGraphAddMemAllocNode, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real(node, graph, dependencies, count, params);
    if (params && hook_enabled())
        record_graph_alloc(graph_memory(), "cuGraphAddMemAllocNode", current_via(),
                           handle_u64(graph), rc == CUDA_SUCCESS ? params->dptr : 0,
                           params->bytesize, rc);
    return rc;
}

// A free node: the allocation ends inside each launch; logged as a free,
// as a captured cuMemFreeAsync is.
GDRHOOK_WRAPPER(CUresult, cuGraphAddMemFreeNode,
                (CUgraphNode * node, CUgraph graph, const CUgraphNode *dependencies, size_t count,
                 CUdeviceptr dptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGraphAddMemFreeNode, CUDA_ERROR_NOT_INITIALIZED);
    FreeTicket ticket = hook_enabled() ? begin_free("cuGraphAddMemFreeNode", current_via(),
                                                    MemoryKind::pool, dptr, 0)
                                       : FreeTicket{};
    CUresult rc = real(node, graph, dependencies, count, dptr);
    end_free(ticket, rc);
    if (rc == CUDA_SUCCESS && ticket.active)
        note_freed_in_graph(graph_memory(), dptr);
    return rc;
}

GDRHOOK_WRAPPER(CUresult, cuDeviceGraphMemTrim, (CUdevice device))
{
    GDRHOOK_REAL_OR_RETURN(real, cuDeviceGraphMemTrim, CUDA_ERROR_NOT_INITIALIZED);
    return graph_release("cuDeviceGraphMemTrim", 0, device, trimmed, [&] { return real(device); });
}

GDRHOOK_WRAPPER(CUresult, cuGraphExecDestroy, (CUgraphExec exec))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGraphExecDestroy, CUDA_ERROR_NOT_INITIALIZED);
    return graph_release("cuGraphExecDestroy", handle_u64(exec), -1, executable_released,
                         [&] { return real(exec); });
}

GDRHOOK_WRAPPER(CUresult, cuGraphDestroy, (CUgraph graph))
{
    GDRHOOK_REAL_OR_RETURN(real, cuGraphDestroy, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = graph_release("cuGraphDestroy", handle_u64(graph), -1, graph_released,
                                [&] { return real(graph); });
    if (rc == CUDA_SUCCESS && runtime_running())
        graph_memory().forget(handle_u64(graph));
    return rc;
}
