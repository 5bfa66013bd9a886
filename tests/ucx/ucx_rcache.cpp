// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// UCX's own registration cache (ucs_rcache) over CUDA memory, configured as
// UCX's CUDA memory domains configure theirs (gdr_copy: UCM_EVENT_MEM_TYPE_FREE
// events, priority 1000): for each free path, register a buffer, free it,
// allocate again at the same address and look the address up. A stale hit
// is a region whose buffer (the driver's CU_POINTER_ATTRIBUTE_BUFFER_ID when
// it was registered) is not the address's buffer now. Each path has a cache
// of its own, so that a region one path left stale cannot answer another's
// lookup.
//
// A second handler of UCX's events, called after the cache's (priority
// 2000), sees each free event as UCX dispatches it and notes whether the
// cache's region had left its page table and whether the driver still held
// the memory (the real free had not run). It also frees a scratch buffer
// from inside the first free event, as UCX's handlers may call CUDA: a
// handler entered again on the same thread is counted as nested.
//
// Builds against Debian's libucx 1.13.1 (CI) and current UCX (1.22)
// (tests/ucx/rcache_compat.h).
//
// Options (none: one round per path, as tests/ucx/test_ucx_bridge.cpp runs
// it over the fake driver):
//   --rounds N        N rounds per path; every lookup after a round's first
//                     is judged too (a region left stale by an earlier round
//                     answers it)
//   --dmabuf          the registration exports the region as a dma-buf
//                     (cuMemGetHandleForAddressRange, DMA_BUF_FD) and the
//                     deregistration closes the fd, as UCX's IB memory
//                     domain holds a dma-buf MR: a stale region keeps freed
//                     memory allocated. Only where the device reports
//                     CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (the fake driver
//                     does, and exports memfds)
//   --lookup-iters M  times M get+put hits on the path's last buffer
//   --paths A,B,...   only these paths (names as printed; default all)
//   --early-rcache    one cache more, made before cuInit, as a UCX program
//                     makes its caches (ucp_init) before its first CUDA
//                     call; prints early_rcache=on|off and carries on
//   --driver-kept     each path once more first, with nothing registered:
//                     driver_kept= is what the driver itself keeps after
//                     that free (-1 when not asked)
//
// Prints one line per path and a last line of totals; exits 0 unless a call
// failed, 3 when UCX refused the cache (ucs_rcache_create failed: UCX turned
// its cache off). mem_held is device memory in use after the path's last
// free and one more cache operation (the cache deregisters what it dropped
// at its next operation) minus before the path's first allocation.
#include <cuda.h>
#ifdef UCX_RCACHE_CUDART
#include <cuda_runtime_api.h>
#endif

#include "../programs/cuda_checks.h"
#include "../programs/used_delta.h"
#include "cuda_region.h"
#include "rcache_compat.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using cuda_region::buffer_id_of;
using cuda_region::export_dmabuf;
using cuda_region::exports_dmabuf;
using rcache_compat::gpu_page;

struct Options {
    int rounds = 1;
    bool dmabuf = false;
    long lookup_iters = 0;
    std::string paths; // comma-separated, empty: all
    bool early_rcache = false;
    bool driver_kept = false;
};
Options options;
bool dmabuf_export = false; // --dmabuf and the device supports it

struct PathCounts {
    const char *name = "";
    int lookups = 0;
    int same_address = 0; // rounds whose second buffer had the first's address
    int registered = 0;
    int free_events = 0;              // UCM_EVENT_MEM_TYPE_FREE seen over the region
    int alloc_events = 0;             // UCM_EVENT_MEM_TYPE_ALLOC seen over the buffers
    int out_of_cache_at_event = 0;    // the region had left the page table then
    int allocated_at_event = 0;       // and the driver still held its buffer
    int dereg_when_free_returned = 0; // after the first round's free
    int dereg_after_lookup = 0;       // after the first round's second lookup
    int stale_hits = 0;
    int deregistered = 0; // regions of this path UCX deregistered so far
    int exports = 0;      // dma-buf fds opened at registration
    int export_failed = 0;
    long long mem_held = 0;
    long long driver_kept = -1; // --driver-kept: held after one cycle with nothing registered
    double lookup_ns = 0;
};

struct Region {
    ucs_rcache_region_t super;
    unsigned long long buffer_id;
    PathCounts *path;
    int dmabuf_fd;
};

// ucs_rcache_get's `arg` for a registration of host memory that only makes
// the cache run its deferred deregistrations (a miss does, a hit does not).
char drain_marker;

PathCounts *current = nullptr;
std::vector<Region *> regions; // registered, not yet deregistered
CUdeviceptr scratch = 0;       // freed from inside the first free event
int nested_events = 0;
thread_local int handler_depth = 0;

ucs_status_t register_region(void *, ucs_rcache_t *, void *arg, ucs_rcache_region_t *r, uint16_t)
{
    auto *region = reinterpret_cast<Region *>(r);
    region->dmabuf_fd = -1;
    region->path = nullptr;
    if (arg == &drain_marker)
        return UCS_OK;
    region->buffer_id = buffer_id_of(r->super.start);
    region->path = current;
    if (dmabuf_export) {
        region->dmabuf_fd = export_dmabuf(r->super.start, r->super.end);
        if (region->dmabuf_fd >= 0)
            ++current->exports;
        else
            ++current->export_failed;
    }
    regions.push_back(region);
    ++current->registered;
    return UCS_OK;
}

void deregister_region(void *, ucs_rcache_t *, ucs_rcache_region_t *r)
{
    auto *region = reinterpret_cast<Region *>(r);
    if (region->dmabuf_fd >= 0)
        close(region->dmabuf_fd);
    if (!region->path)
        return;
    ++region->path->deregistered;
    for (size_t i = 0; i < regions.size(); ++i)
        if (regions[i] == region)
            regions.erase(regions.begin() + long(i));
}

void dump_region(void *, ucs_rcache_t *, ucs_rcache_region_t *, char *buf, size_t max)
{
    if (max)
        buf[0] = '\0';
}

const ucs_rcache_ops_t ops =
    rcache_compat::make_ops(register_region, deregister_region, dump_region);

void observe(ucm_event_type_t type, ucm_event_t *event, void *)
{
    if (handler_depth > 0)
        ++nested_events;
    ++handler_depth;
    const uint64_t start = reinterpret_cast<uint64_t>(event->mem_type.address);
    const uint64_t end = start + event->mem_type.size;
    if (type == UCM_EVENT_MEM_TYPE_ALLOC && current)
        ++current->alloc_events;
    if (type == UCM_EVENT_MEM_TYPE_FREE) {
        for (Region *region : regions) {
            if (region->super.super.start >= end || region->super.super.end <= start)
                continue;
            PathCounts &path = *region->path;
            ++path.free_events;
            path.out_of_cache_at_event += !(region->super.flags & UCS_RCACHE_REGION_FLAG_PGTABLE);
            path.allocated_at_event += buffer_id_of(region->super.super.start) == region->buffer_id;
        }
        if (scratch) {
            CUdeviceptr p = scratch;
            scratch = 0;
            cuMemFree_v2(p); // UCX's handlers may call CUDA
        }
    }
    --handler_depth;
}

ucs_rcache_t *make_rcache(bool fatal = true)
{
    // As UCX's CUDA memory domains (gdr_copy): UCM_EVENT_MEM_TYPE_FREE at
    // priority 1000.
    const ucs_rcache_params_t params = rcache_compat::cuda_md_params(sizeof(Region), &ops);
    ucs_rcache_t *rcache = nullptr;
    ucs_status_t status = ucs_rcache_create(&params, "ucx_rcache test", nullptr, &rcache);
    if (status != UCS_OK) {
        // UCX turns its cache off when it cannot hear of frees.
        printf("rcache=off status=%d (%s)\n", int(status), ucs_status_string(status));
        if (fatal)
            exit(3);
        return nullptr;
    }
    return rcache;
}

ucs_rcache_region_t *get(ucs_rcache_t *rcache, uint64_t addr, size_t size, void *arg = nullptr)
{
    ucs_rcache_region_t *region = nullptr;
    ucs_status_t status =
        rcache_compat::get(rcache, reinterpret_cast<void *>(addr), size, arg, &region);
    if (status != UCS_OK) {
        fprintf(stderr, "ucs_rcache_get(0x%lx, %zu): %s\n", (unsigned long)addr, size,
                ucs_status_string(status));
        exit(2);
    }
    return region;
}

// A lookup that misses, over host memory never freed (each path's cache is
// new): the cache runs the deregistrations it deferred.
void drain(ucs_rcache_t *rcache)
{
    alignas(gpu_page) static char page[gpu_page];
    ucs_rcache_region_put(rcache,
                          get(rcache, reinterpret_cast<uint64_t>(page), 4096, &drain_marker));
}

// Device memory in use over `before`, asked again for up to a second while
// it is higher (a dma-buf that gdrhook's worker closes after the free).
long long held_since(long long before)
{
    return settled_used_delta(
        before, [] { return device_bytes_in_use(2); }, 20, std::chrono::milliseconds(50));
}

// One lookup, judged by the driver's buffer ID.
ucs_rcache_region_t *judged_get(ucs_rcache_t *rcache, PathCounts &path, uint64_t addr, size_t size)
{
    ucs_rcache_region_t *hit = get(rcache, addr, size);
    ++path.lookups;
    path.stale_hits += reinterpret_cast<Region *>(hit)->buffer_id != buffer_id_of(addr);
    return hit;
}

bool wanted(const char *name)
{
    if (options.paths.empty())
        return true;
    const std::string list = "," + options.paths + ",";
    return list.find("," + std::string(name) + ",") != std::string::npos;
}

// One free path: `allocate` makes a buffer of `size` and returns its
// address, `release` frees it by the path.
template <typename Allocate, typename Release>
void run_path(PathCounts &path, size_t size, Allocate &&allocate, Release &&release)
{
    if (!wanted(path.name))
        return;
    ucs_rcache_t *rcache = make_rcache();
    const long long used_before = device_bytes_in_use(2);
    if (options.driver_kept) {
        // The same path once with nothing registered, before the cache
        // sees it: what the driver itself keeps after this free (a graph's
        // memory stays in the device's graph pool until a trim), the
        // reference mem_held is judged against.
        release(allocate(size));
        CHECK_CU_OR_EXIT(cuCtxSynchronize(), 2);
        path.driver_kept = held_since(used_before);
    }
    current = &path;
    uint64_t second = 0;
    for (int round = 0; round < options.rounds; ++round) {
        if (round > 0)
            release(second);
        const uint64_t first = allocate(size);
        ucs_rcache_region_put(rcache, judged_get(rcache, path, first, size)); // stays in the cache
        release(first);
        if (round == 0)
            path.dereg_when_free_returned = path.deregistered;
        second = allocate(size);
        path.same_address += second == first;
        ucs_rcache_region_put(rcache, judged_get(rcache, path, second, size));
        if (round == 0)
            path.dereg_after_lookup = path.deregistered;
    }
    if (options.lookup_iters > 0) {
        const auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < options.lookup_iters; ++i) {
            ucs_rcache_region_t *region = nullptr;
            rcache_compat::get(rcache, reinterpret_cast<void *>(second), size, nullptr, &region);
            ucs_rcache_region_put(rcache, region);
        }
        const auto t1 = std::chrono::steady_clock::now();
        path.lookup_ns = std::chrono::duration<double, std::nano>(t1 - t0).count() /
                         double(options.lookup_iters);
    }
    release(second);
    drain(rcache);
    // A synchronization: stream-ordered pools give back what they no
    // longer hold at one.
    CHECK_CU_OR_EXIT(cuCtxSynchronize(), 2);
    path.mem_held = held_since(used_before);
    printf("path=%s rounds=%d lookups=%d same_address=%d registered=%d free_events=%d "
           "alloc_events=%d out_of_cache_at_event=%d allocated_at_event=%d "
           "dereg_when_free_returned=%d dereg_after_lookup=%d stale_hits=%d exports=%d "
           "export_failed=%d mem_held=%lld driver_kept=%lld lookup_ns=%.1f\n",
           path.name, options.rounds, path.lookups, path.same_address, path.registered,
           path.free_events, path.alloc_events, path.out_of_cache_at_event, path.allocated_at_event,
           path.dereg_when_free_returned, path.dereg_after_lookup, path.stale_hits, path.exports,
           path.export_failed, path.mem_held, path.driver_kept, path.lookup_ns);
    current = nullptr;
    // Deregisters what the path left (a stale region's dma-buf too).
    ucs_rcache_destroy(rcache);
    regions.clear();
}

// A graph with one allocation node and a free node that ends it inside
// each launch (as a captured cuMemAllocAsync and cuMemFreeAsync make).
struct GraphWithMemory {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    CUdeviceptr address = 0;

    void build(size_t size)
    {
        CHECK_CU_OR_EXIT(cuGraphCreate(&graph, 0), 2);
        CUDA_MEM_ALLOC_NODE_PARAMS params;
        memset(&params, 0, sizeof(params));
        params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        params.poolProps.location.id = 0;
        params.bytesize = size;
        CUgraphNode alloc_node, free_node;
        CHECK_CU_OR_EXIT(cuGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &params), 2);
        address = params.dptr;
        CHECK_CU_OR_EXIT(cuGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, address), 2);
        CHECK_CU_OR_EXIT(cuGraphInstantiateWithFlags(&exec, graph, 0), 2);
    }

    // The memory is mapped once a launch has run.
    uint64_t launch(CUstream stream)
    {
        CHECK_CU_OR_EXIT(cuGraphLaunch(exec, stream), 2);
        CHECK_CU_OR_EXIT(cuStreamSynchronize(stream), 2);
        return address;
    }

    // The graph first: its destruction gives the address back.
    void destroy()
    {
        CHECK_CU_OR_EXIT(cuGraphDestroy(graph), 2);
        CHECK_CU_OR_EXIT(cuGraphExecDestroy(exec), 2);
        *this = GraphWithMemory{};
    }
};

void parse_options(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--rounds" && i + 1 < argc)
            options.rounds = atoi(argv[++i]);
        else if (arg == "--dmabuf")
            options.dmabuf = true;
        else if (arg == "--lookup-iters" && i + 1 < argc)
            options.lookup_iters = atol(argv[++i]);
        else if (arg == "--paths" && i + 1 < argc)
            options.paths = argv[++i];
        else if (arg == "--early-rcache")
            options.early_rcache = true;
        else if (arg == "--driver-kept")
            options.driver_kept = true;
        else {
            fprintf(stderr,
                    "usage: %s [--rounds N] [--dmabuf] [--lookup-iters M] "
                    "[--paths A,B,...] [--early-rcache]\n",
                    argv[0]);
            exit(2);
        }
    }
    if (options.rounds < 1)
        options.rounds = 1;
}

// The driver's frees: plain, stream-ordered, VMM (in `va`, reserved for
// the whole run) and a pool's trim.
void run_driver_paths(std::vector<PathCounts> &paths, CUdevice device, CUstream stream,
                      CUdeviceptr va, size_t vmm_size)
{
    paths[0].name = "cuMemFree_v2";
    run_path(
        paths[0], 8 << 20,
        [](size_t size) {
            CUdeviceptr p = 0;
            CHECK_CU_OR_EXIT(cuMemAlloc_v2(&p, size), 2);
            return uint64_t(p);
        },
        [](uint64_t p) { CHECK_CU_OR_EXIT(cuMemFree_v2(p), 2); });

    // Stream-ordered memory is exportable once its stream has passed the
    // allocation: the stream is synchronized before the registration.
    paths[1].name = "cuMemFreeAsync";
    run_path(
        paths[1], 10 << 20,
        [&](size_t size) {
            CUdeviceptr p = 0;
            CHECK_CU_OR_EXIT(cuMemAllocAsync(&p, size, stream), 2);
            CHECK_CU_OR_EXIT(cuStreamSynchronize(stream), 2);
            return uint64_t(p);
        },
        [&](uint64_t p) {
            CHECK_CU_OR_EXIT(cuMemFreeAsync(p, stream), 2);
            CHECK_CU_OR_EXIT(cuStreamSynchronize(stream), 2);
        });

    paths[2].name = "cuMemUnmap+cuMemRelease";
    CUmemGenericAllocationHandle handle = 0;
    run_path(
        paths[2], vmm_size,
        [&](size_t size) {
            CUmemAllocationProp prop = {};
            prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.location.id = device;
            CHECK_CU_OR_EXIT(cuMemCreate(&handle, size, &prop, 0), 2);
            CHECK_CU_OR_EXIT(cuMemMap(va, size, 0, handle, 0), 2);
            CUmemAccessDesc access = {};
            access.location = prop.location;
            access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            CHECK_CU_OR_EXIT(cuMemSetAccess(va, size, &access, 1), 2);
            return uint64_t(va);
        },
        [&](uint64_t p) {
            CHECK_CU_OR_EXIT(cuMemUnmap(p, vmm_size), 2);
            CHECK_CU_OR_EXIT(cuMemRelease(handle), 2);
        });

    paths[3].name = "cuMemPoolTrimTo";
    CUmemoryPool pool = nullptr;
    CUmemPoolProps pool_props = {};
    pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool_props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pool_props.location.id = device;
    CHECK_CU_OR_EXIT(cuMemPoolCreate(&pool, &pool_props), 2);
    run_path(
        paths[3], 12 << 20,
        [&](size_t size) {
            CUdeviceptr p = 0;
            CHECK_CU_OR_EXIT(cuMemAllocFromPoolAsync(&p, size, pool, stream), 2);
            CHECK_CU_OR_EXIT(cuStreamSynchronize(stream), 2);
            return uint64_t(p);
        },
        [&](uint64_t p) {
            CHECK_CU_OR_EXIT(cuMemFreeAsync(p, stream), 2);
            CHECK_CU_OR_EXIT(cuStreamSynchronize(stream), 2);
            CHECK_CU_OR_EXIT(cuMemPoolTrimTo(pool, 0), 2);
        });
}

// The runtime's free, and the frees that end graph memory and a context.
void run_runtime_graph_and_context_paths(std::vector<PathCounts> &paths, CUdevice device,
                                         CUcontext context, CUstream stream)
{
#ifdef UCX_RCACHE_CUDART
    // The CUDA runtime (linked statically where built so): it reaches the
    // driver through cuGetProcAddress, not through libcuda's exports.
    paths[4].name = "cudaFree";
    run_path(
        paths[4], 14 << 20,
        [](size_t size) {
            void *p = nullptr;
            CHECK_CU_OR_EXIT(cudaMalloc(&p, size), 2);
            return uint64_t(reinterpret_cast<uintptr_t>(p));
        },
        [](uint64_t p) { CHECK_CU_OR_EXIT(cudaFree(reinterpret_cast<void *>(p)), 2); });
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
#endif

    // Graph memory: an allocation node whose allocation a free node ends
    // inside each launch, registered after a launch. A trim unmaps it (a
    // launch maps it again, at the graph's address); destroying the graph
    // gives the address back.
    paths[6].name = "cuDeviceGraphMemTrim";
    GraphWithMemory trimmed;
    run_path(
        paths[6], 18 << 20,
        [&](size_t size) {
            if (!trimmed.graph)
                trimmed.build(size);
            return trimmed.launch(stream);
        },
        [&](uint64_t) { CHECK_CU_OR_EXIT(cuDeviceGraphMemTrim(device), 2); });
    trimmed.destroy();

    paths[7].name = "cuGraphDestroy";
    GraphWithMemory owner;
    run_path(
        paths[7], 22 << 20,
        [&](size_t size) {
            owner.build(size);
            return owner.launch(stream);
        },
        [&](uint64_t) { owner.destroy(); });

    paths[5].name = "cuCtxDestroy";
    CUcontext doomed = nullptr;
    run_path(
        paths[5], 20 << 20,
        [&](size_t size) {
            CHECK_CU_OR_EXIT(cuCtxCreate(&doomed, nullptr, 0, device), 2);
            CUdeviceptr p = 0;
            CHECK_CU_OR_EXIT(cuMemAlloc_v2(&p, size), 2);
            return uint64_t(p);
        },
        [&](uint64_t) {
            CHECK_CU_OR_EXIT(cuCtxDestroy(doomed), 2);
            // The primary context again, for cuMemGetInfo.
            CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
        });
}

} // namespace

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    parse_options(argc, argv);
    // As a UCX program starts (ucp_init before any CUDA call): the cache,
    // and with it UCX's CUDA hooks, before the shim has seen CUDA used.
    ucs_rcache_t *early = nullptr;
    if (options.early_rcache) {
        early = make_rcache(false);
        printf("early_rcache=%s\n", early ? "on" : "off");
    }
    CHECK_CU_OR_EXIT(cuInit(0), 2);
    CUdevice device = 0;
    CHECK_CU_OR_EXIT(cuDeviceGet(&device, 0), 2);
    CUcontext context = nullptr;
    // The primary context, as the CUDA runtime takes it at its start.
    CHECK_CU_OR_EXIT(cuDevicePrimaryCtxRetain(&context, device), 2);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
    if (options.dmabuf) {
        dmabuf_export = exports_dmabuf(device);
        printf("dmabuf=%d\n", int(dmabuf_export));
    }
    // The first cache, before the handler below: the cache's
    // ucm_set_event_handler is the one that installs UCX's CUDA hooks (where
    // the events are not external).
    ucs_rcache_destroy(make_rcache());
    if (ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 2000, observe,
                              nullptr) != UCS_OK) {
        fprintf(stderr, "ucm_set_event_handler failed\n");
        return 2;
    }
    CHECK_CU_OR_EXIT(cuMemAlloc_v2(&scratch, 4096), 2);
    CUstream stream = nullptr;
    CHECK_CU_OR_EXIT(cuStreamCreate(&stream, 0), 2);

    // Sizes a few MiB apart: a region left stale holds this much.
    std::vector<PathCounts> paths(8);
    const size_t vmm_size = 16 << 20;
    CUdeviceptr va = 0;
    CHECK_CU_OR_EXIT(cuMemAddressReserve(&va, vmm_size, 0, 0, 0), 2);
    run_driver_paths(paths, device, stream, va, vmm_size);
    run_runtime_graph_and_context_paths(paths, device, context, stream);
    CHECK_CU_OR_EXIT(cuCtxSetCurrent(context), 2);
    // Not before: a later path's buffer could land in the range.
    CHECK_CU_OR_EXIT(cuMemAddressFree(va, vmm_size), 2);

    int stale = 0, lookups = 0;
    for (const PathCounts &path : paths) {
        stale += path.stale_hits;
        lookups += path.lookups;
    }
    const bool scratch_freed = scratch == 0;
    if (!scratch_freed) // no free event came (no bridge, no hooks of UCX's)
        CHECK_CU_OR_EXIT(cuMemFree_v2(scratch), 2);
    printf("stale_hits_total=%d lookups_total=%d nested_events=%d scratch_freed=%d\n", stale,
           lookups, nested_events, int(scratch_freed));
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, observe, nullptr);
    if (early)
        ucs_rcache_destroy(early);
    return 0;
}
