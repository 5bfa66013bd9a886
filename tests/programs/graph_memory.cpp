// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Graph memory, released the ways CUDA releases it, with a library's
// registration (gdrhook_get, when the shim is loaded) over it; on the fake
// driver and on a GPU.
//
//   graph_memory trim      a graph built by hand with an allocation node and
//                          a free node, launched 100 times, registered,
//                          then cuDeviceGraphMemTrim; waits for the memory
//                          to come back, then destroys the executable graph
//                          and the graph
//   graph_memory executable  the same graph, launched and registered, then
//                          its executable graph destroyed; waits for the
//                          memory to come back, then destroys the graph
//   graph_memory destroy   the same graph, launched and registered, then
//                          destroyed; a cuMemAlloc of the same size (the
//                          driver may hand the address out again) is
//                          registered and freed
//   graph_memory captured  the same with a graph captured in global mode
//                          from cuMemAllocAsync and cuMemFreeAsync
//   graph_memory outlives  an allocation node with no free node: the
//                          allocation outlives the graph's destruction and
//                          is freed with cuMemFree, then a trim
//
// Prints frees_made=N on stdout (the deallocation calls the shim logs as
// `free` events: a free node, a trim, the destruction of a graph that owns
// allocations, of an executable graph while graph memory freed inside its
// graph exists, cuMemFree) and mem_used_delta=N on stderr. Exit status 0
// when every driver call succeeded.
#include "cuda_checks.h"
#include "used_delta.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <thread>

#include "library_registration.h"

namespace {

constexpr size_t size = 4 << 20;

// What a communication library does with a buffer it sends from (nothing
// without the shim).
void register_range(CUdeviceptr p)
{
    register_with_shim(p, size);
}

// The shim unpins on its worker thread: the memory of a released pin
// comes back within moments, not at exit. Up to 3 s.
long long used_since(long long baseline)
{
    return settled_used_delta(
        baseline, [] { return device_bytes_in_use(); }, 300);
}

// What a release gave back, before anything else runs (on stderr, where
// tests/gpu/table_row.py leaves mem_used_delta lines out of the
// comparison and judges the last one).
void report_after(const char *release, long long baseline)
{
    std::fprintf(stderr, "after %s: mem_used_delta=%lld\n", release, used_since(baseline));
}

CUDA_MEM_ALLOC_NODE_PARAMS device_memory()
{
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    std::memset(&params, 0, sizeof(params));
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = size;
    return params;
}

// A graph that allocates and (free_inside) frees one buffer.
int build(CUgraph &graph, CUdeviceptr &p, bool free_inside)
{
    CHECK_CU(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS params = device_memory();
    CUgraphNode alloc_node, free_node;
    CHECK_CU(cuGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &params));
    p = params.dptr;
    if (free_inside)
        CHECK_CU(cuGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, p));
    return 0;
}

int run(CUgraph graph, CUgraphExec &exec, CUstream stream, int launches)
{
    CHECK_CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int i = 0; i < launches; ++i)
        CHECK_CU(cuGraphLaunch(exec, stream));
    CHECK_CU(cuStreamSynchronize(stream));
    return 0;
}

int trim(CUstream stream, long long baseline)
{
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr p = 0;
    if (build(graph, p, true) || run(graph, exec, stream, 100))
        return 1;
    register_range(p);
    CHECK_CU(cuDeviceGraphMemTrim(0));
    report_after("trim", baseline);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(graph));
    std::printf("frees_made=4\n"); // free node, trim, executable graph, graph
    return 0;
}

int executable(CUstream stream, long long baseline)
{
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr p = 0;
    if (build(graph, p, true) || run(graph, exec, stream, 10))
        return 1;
    register_range(p);
    CHECK_CU(cuGraphExecDestroy(exec));
    report_after("exec destroy", baseline);
    CHECK_CU(cuGraphDestroy(graph));
    std::printf("frees_made=3\n"); // free node, executable graph, graph
    return 0;
}

// The graph's addresses are given back with it: a new allocation may get
// one, and its registration must be its own.
int reuse_after_destroy(CUgraph graph, CUgraphExec exec, CUdeviceptr p)
{
    register_range(p);
    CHECK_CU(cuGraphDestroy(graph));
    CUdeviceptr again = 0;
    CHECK_CU(cuMemAlloc(&again, size));
    register_range(again);
    CHECK_CU(cuMemFree(again));
    CHECK_CU(cuGraphExecDestroy(exec)); // its graph's memory is gone already
    return 0;
}

int destroy(CUstream stream)
{
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr p = 0;
    if (build(graph, p, true) || run(graph, exec, stream, 10) ||
        reuse_after_destroy(graph, exec, p))
        return 1;
    std::printf("frees_made=3\n"); // free node, graph, cuMemFree
    return 0;
}

int captured(CUstream stream)
{
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAllocAsync(&p, size, stream));
    CHECK_CU(cuMemFreeAsync(p, stream));
    CUgraph graph;
    CHECK_CU(cuStreamEndCapture(stream, &graph));
    CUgraphExec exec;
    if (run(graph, exec, stream, 10) || reuse_after_destroy(graph, exec, p))
        return 1;
    std::printf("frees_made=3\n"); // the captured free, graph, cuMemFree
    return 0;
}

int outlives(CUstream stream)
{
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr p = 0;
    if (build(graph, p, false) || run(graph, exec, stream, 1))
        return 1;
    register_range(p);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(graph));
    register_range(p); // still the program's memory
    CHECK_CU(cuMemFree(p));
    CHECK_CU(cuDeviceGraphMemTrim(0));
    std::printf("frees_made=3\n"); // graph, cuMemFree, trim
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    const long long at_start = device_bytes_in_use();
    int rc = 2;
    if (!std::strcmp(mode, "trim"))
        rc = trim(stream, at_start);
    else if (!std::strcmp(mode, "executable"))
        rc = executable(stream, at_start);
    else if (!std::strcmp(mode, "destroy"))
        rc = destroy(stream);
    else if (!std::strcmp(mode, "captured"))
        rc = captured(stream);
    else if (!std::strcmp(mode, "outlives"))
        rc = outlives(stream);
    else
        std::fprintf(stderr, "usage: graph_memory trim|executable|destroy|captured|outlives\n");
    if (rc != 0)
        return rc;
    CHECK_CU(cuStreamDestroy(stream));
    std::fprintf(stderr, "mem_used_delta=%lld\n", used_since(at_start));
    return 0;
}
