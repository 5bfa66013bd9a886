// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// UCX's own registration cache (ucs_rcache, Debian's libucx 1.13.1) over
// CUDA memory, configured as UCX's CUDA memory domains configure theirs
// (gdr_copy: UCM_EVENT_MEM_TYPE_FREE events, priority 1000): for each free
// path, register a buffer, free it, allocate again at the same address and
// look the address up. A stale hit is a region whose buffer (the driver's
// CU_POINTER_ATTRIBUTE_BUFFER_ID when it was registered) is not the
// address's buffer now.
//
// A second handler of UCX's events, called after the cache's (priority
// 2000), sees each free event as UCX dispatches it and notes whether the
// cache's region had left its page table and whether the driver still held
// the memory (the real free had not run). It also frees a scratch buffer
// from inside the first free event, as UCX's handlers may call CUDA: a
// handler entered again on the same thread is counted as nested.
//
// Prints one line per path and a last line of totals; exits 0 unless a
// call failed. tests/ucx/test_ucx_bridge.cpp judges the counts.
#include <cuda.h>

extern "C" {
#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>
}

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <vector>

namespace {

void check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, rc);
        exit(2);
    }
}

unsigned long long buffer_id_of(uint64_t addr)
{
    unsigned long long id = 0;
    if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, addr) != CUDA_SUCCESS)
        return 0;
    return id;
}

struct PathCounts {
    const char *name = "";
    int same_address = 0;
    int registered = 0;
    int free_events = 0;             // UCM_EVENT_MEM_TYPE_FREE seen over the region
    int alloc_events = 0;            // UCM_EVENT_MEM_TYPE_ALLOC seen over the buffers
    int out_of_cache_at_event = 0;   // the region had left the page table then
    int allocated_at_event = 0;      // and the driver still held its buffer
    int dereg_when_free_returned = 0;
    int dereg_after_lookup = 0;
    int stale_hits = 0;
    int deregistered = 0;            // regions of this path UCX deregistered so far
};

struct Region {
    ucs_rcache_region_t super;
    unsigned long long buffer_id;
    PathCounts *path;
};

PathCounts *current = nullptr;
std::vector<Region *> regions; // registered, not yet deregistered
CUdeviceptr scratch = 0;       // freed from inside the first free event
int nested_events = 0;
thread_local int handler_depth = 0;

ucs_status_t register_region(void *, ucs_rcache_t *, void *, ucs_rcache_region_t *r, uint16_t)
{
    auto *region = reinterpret_cast<Region *>(r);
    region->buffer_id = buffer_id_of(r->super.start);
    region->path = current;
    regions.push_back(region);
    ++current->registered;
    return UCS_OK;
}

void deregister_region(void *, ucs_rcache_t *, ucs_rcache_region_t *r)
{
    auto *region = reinterpret_cast<Region *>(r);
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

const ucs_rcache_ops_t ops = {register_region, deregister_region, dump_region};

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

ucs_rcache_t *make_rcache()
{
    ucs_rcache_params_t params = {};
    params.region_struct_size = sizeof(Region);
    params.alignment = UCS_PGT_ADDR_ALIGN;
    params.max_alignment = 65536;
    params.ucm_events = UCM_EVENT_MEM_TYPE_FREE; // as UCX's CUDA memory domains
    params.ucm_event_priority = 1000;           // UCX_RCACHE_MEM_PRIO's default
    params.ops = &ops;
    params.context = nullptr;
    params.flags = 0;
    params.max_regions = ULONG_MAX;
    params.max_size = SIZE_MAX;
    params.max_unreleased = SIZE_MAX;
    ucs_rcache_t *rcache = nullptr;
    ucs_status_t status = ucs_rcache_create(&params, "ucx_rcache test", nullptr, &rcache);
    if (status != UCS_OK) {
        fprintf(stderr, "ucs_rcache_create: %s\n", ucs_status_string(status));
        exit(2);
    }
    return rcache;
}

ucs_rcache_region_t *get(ucs_rcache_t *rcache, uint64_t addr, size_t size)
{
    ucs_rcache_region_t *region = nullptr;
    ucs_status_t status = ucs_rcache_get(rcache, reinterpret_cast<void *>(addr), size,
                                         PROT_READ | PROT_WRITE, nullptr, &region);
    if (status != UCS_OK) {
        fprintf(stderr, "ucs_rcache_get(0x%lx, %zu): %s\n", (unsigned long)addr, size,
                ucs_status_string(status));
        exit(2);
    }
    return region;
}

// One free path: `allocate` makes a buffer of `size` and returns its
// address, `release` frees it by the path.
template <typename Allocate, typename Release>
void run_path(ucs_rcache_t *rcache, PathCounts &path, size_t size, Allocate &&allocate,
              Release &&release)
{
    current = &path;
    const uint64_t first = allocate(size);
    ucs_rcache_region_put(rcache, get(rcache, first, size)); // stays in the cache
    release(first);
    path.dereg_when_free_returned = path.deregistered;
    const uint64_t second = allocate(size);
    path.same_address = second == first;
    ucs_rcache_region_t *hit = get(rcache, second, size);
    path.stale_hits += reinterpret_cast<Region *>(hit)->buffer_id != buffer_id_of(second);
    ucs_rcache_region_put(rcache, hit);
    path.dereg_after_lookup = path.deregistered;
    printf("path=%s same_address=%d registered=%d free_events=%d alloc_events=%d "
           "out_of_cache_at_event=%d allocated_at_event=%d dereg_when_free_returned=%d "
           "dereg_after_lookup=%d stale_hits=%d\n",
           path.name, path.same_address, path.registered, path.free_events, path.alloc_events,
           path.out_of_cache_at_event, path.allocated_at_event, path.dereg_when_free_returned,
           path.dereg_after_lookup, path.stale_hits);
    release(second);
    current = nullptr;
}

} // namespace

int main()
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    check(cuInit(0), "cuInit");
    CUcontext context = nullptr;
    // The primary context, as the CUDA runtime takes it at its start.
    check(cuDevicePrimaryCtxRetain(&context, 0), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    ucs_rcache_t *rcache = make_rcache();
    if (ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 2000,
                              observe, nullptr) != UCS_OK) {
        fprintf(stderr, "ucm_set_event_handler failed\n");
        return 2;
    }
    check(cuMemAlloc_v2(&scratch, 4096), "cuMemAlloc_v2 (scratch)");
    CUstream stream = nullptr;
    check(cuStreamCreate(&stream, 0), "cuStreamCreate");

    std::vector<PathCounts> paths(5);
    paths[0].name = "cuMemFree_v2";
    run_path(rcache, paths[0], 1 << 20,
             [](size_t size) {
                 CUdeviceptr p = 0;
                 check(cuMemAlloc_v2(&p, size), "cuMemAlloc_v2");
                 return uint64_t(p);
             },
             [](uint64_t p) { check(cuMemFree_v2(p), "cuMemFree_v2"); });

    paths[1].name = "cuMemFreeAsync";
    run_path(rcache, paths[1], 2 << 20,
             [&](size_t size) {
                 CUdeviceptr p = 0;
                 check(cuMemAllocAsync(&p, size, stream), "cuMemAllocAsync");
                 return uint64_t(p);
             },
             [&](uint64_t p) {
                 check(cuMemFreeAsync(p, stream), "cuMemFreeAsync");
                 check(cuStreamSynchronize(stream), "cuStreamSynchronize");
             });

    paths[2].name = "cuMemUnmap+cuMemRelease";
    const size_t vmm_size = 4 << 20;
    CUdeviceptr va = 0;
    check(cuMemAddressReserve(&va, vmm_size, 0, 0, 0), "cuMemAddressReserve");
    CUmemGenericAllocationHandle handle = 0;
    run_path(rcache, paths[2], vmm_size,
             [&](size_t size) {
                 CUmemAllocationProp prop = {};
                 prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
                 prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                 check(cuMemCreate(&handle, size, &prop, 0), "cuMemCreate");
                 check(cuMemMap(va, size, 0, handle, 0), "cuMemMap");
                 return uint64_t(va);
             },
             [&](uint64_t p) {
                 check(cuMemUnmap(p, vmm_size), "cuMemUnmap");
                 check(cuMemRelease(handle), "cuMemRelease");
             });

    paths[3].name = "cuMemPoolTrimTo";
    CUmemoryPool pool = nullptr;
    CUmemPoolProps pool_props = {};
    pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool_props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    check(cuMemPoolCreate(&pool, &pool_props), "cuMemPoolCreate");
    run_path(rcache, paths[3], 3 << 20,
             [&](size_t size) {
                 CUdeviceptr p = 0;
                 check(cuMemAllocFromPoolAsync(&p, size, pool, stream), "cuMemAllocFromPoolAsync");
                 return uint64_t(p);
             },
             [&](uint64_t p) {
                 check(cuMemFreeAsync(p, stream), "cuMemFreeAsync");
                 check(cuStreamSynchronize(stream), "cuStreamSynchronize");
                 check(cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo");
             });

    paths[4].name = "cuCtxDestroy";
    CUcontext doomed = nullptr;
    run_path(rcache, paths[4], 5 << 20,
             [&](size_t size) {
                 check(cuCtxCreate(&doomed, nullptr, 0, 0), "cuCtxCreate");
                 CUdeviceptr p = 0;
                 check(cuMemAlloc_v2(&p, size), "cuMemAlloc_v2");
                 return uint64_t(p);
             },
             [&](uint64_t) { check(cuCtxDestroy(doomed), "cuCtxDestroy"); });
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    // Not before: a later path's buffer could land in the range.
    check(cuMemAddressFree(va, vmm_size), "cuMemAddressFree");

    int stale = 0;
    for (const PathCounts &path : paths)
        stale += path.stale_hits;
    printf("stale_hits_total=%d nested_events=%d scratch_freed=%d\n", stale, nested_events,
           scratch == 0);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, observe, nullptr);
    ucs_rcache_destroy(rcache);
    return 0;
}
