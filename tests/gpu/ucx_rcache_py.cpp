// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// UCX's own registration cache (ucs_rcache), configured as in
// tests/ucx/ucx_rcache.cpp (UCM_EVENT_MEM_TYPE_FREE, a dma-buf held from
// registration to deregistration), as a library that a Python program
// loads with ctypes to judge the buffers of PyTorch or JAX
// (tests/gpu/ucx_frameworks.py). A lookup is stale when the region's
// buffer (the driver's CU_POINTER_ATTRIBUTE_BUFFER_ID at registration) is
// not the address's buffer now.
//
// C interface, every function on the thread that opened the cache:
//   int ucxr_open(int dmabuf)   0, or 3 when UCX refused the cache
//   int ucxr_lookup(addr, size) 0 fresh or a miss, 1 stale, -1 failed
//   double ucxr_time_hits(addr, size, n)  ns per get+put hit
//   long long ucxr_used(void)   device memory in use (cuMemGetInfo)
//   void ucxr_drain(void)       a miss: the deregistrations UCX deferred run
//   int ucxr_exports(void), ucxr_export_failed(void)
//   void ucxr_close(void)
#include "tests/ucx/cuda_region.h"
#include "tests/ucx/rcache_compat.h"

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace {

struct Region {
    ucs_rcache_region_t super;
    unsigned long long buffer_id;
    int dmabuf_fd;
};

ucs_rcache_t *cache = nullptr;
bool dmabuf_export = false;
int exports = 0, export_failed = 0;
char drain_marker;

using cuda_region::buffer_id_of;

ucs_status_t register_region(void *, ucs_rcache_t *, void *arg, ucs_rcache_region_t *r, uint16_t)
{
    auto *region = reinterpret_cast<Region *>(r);
    region->dmabuf_fd = -1;
    region->buffer_id = 0;
    if (arg == &drain_marker)
        return UCS_OK;
    region->buffer_id = buffer_id_of(r->super.start);
    if (dmabuf_export) {
        region->dmabuf_fd = cuda_region::export_dmabuf(r->super.start, r->super.end);
        if (region->dmabuf_fd >= 0)
            ++exports;
        else
            ++export_failed;
    }
    return UCS_OK;
}

void deregister_region(void *, ucs_rcache_t *, ucs_rcache_region_t *r)
{
    auto *region = reinterpret_cast<Region *>(r);
    if (region->dmabuf_fd >= 0)
        close(region->dmabuf_fd);
}

void dump_region(void *, ucs_rcache_t *, ucs_rcache_region_t *, char *buf, size_t max)
{
    if (max)
        buf[0] = '\0';
}

const ucs_rcache_ops_t ops =
    rcache_compat::make_ops(register_region, deregister_region, dump_region);

// The frameworks keep their contexts current on their own threads: the
// primary context of device 0, current here too, for the queries.
bool make_context_current()
{
    CUcontext current = nullptr;
    if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current)
        return true;
    CUdevice device = 0;
    CUcontext primary = nullptr;
    return cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&device, 0) == CUDA_SUCCESS &&
           cuDevicePrimaryCtxRetain(&primary, device) == CUDA_SUCCESS &&
           cuCtxSetCurrent(primary) == CUDA_SUCCESS;
}

} // namespace

extern "C" {

int ucxr_open(int dmabuf)
{
    if (!make_context_current()) {
        fprintf(stderr, "ucxr_open: no CUDA context\n");
        return -1;
    }
    if (dmabuf) {
        dmabuf_export = cuda_region::exports_dmabuf(0);
    }
    const ucs_rcache_params_t params = rcache_compat::cuda_md_params(sizeof(Region), &ops);
    ucs_status_t status = ucs_rcache_create(&params, "ucx_rcache_py", nullptr, &cache);
    if (status != UCS_OK) {
        printf("rcache=off status=%d (%s)\n", int(status), ucs_status_string(status));
        fflush(stdout);
        cache = nullptr;
        return 3;
    }
    return 0;
}

int ucxr_lookup(unsigned long long addr, unsigned long long size)
{
    ucs_rcache_region_t *region = nullptr;
    if (!cache ||
        rcache_compat::get(cache, reinterpret_cast<void *>(addr), size, nullptr, &region) != UCS_OK)
        return -1;
    const bool stale = reinterpret_cast<Region *>(region)->buffer_id != buffer_id_of(addr);
    ucs_rcache_region_put(cache, region); // stays in the cache
    return stale;
}

double ucxr_time_hits(unsigned long long addr, unsigned long long size, long n)
{
    if (!cache || n <= 0)
        return 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
        ucs_rcache_region_t *region = nullptr;
        if (rcache_compat::get(cache, reinterpret_cast<void *>(addr), size, nullptr, &region) !=
            UCS_OK)
            return -1;
        ucs_rcache_region_put(cache, region);
    }
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(n);
}

long long ucxr_used(void)
{
    size_t free_bytes = 0, total = 0;
    if (!make_context_current() || cuMemGetInfo_v2(&free_bytes, &total) != CUDA_SUCCESS)
        return -1;
    return static_cast<long long>(total - free_bytes);
}

void ucxr_drain(void)
{
    // A page the cache has not seen, each time (64 drains; regions 2 GPU
    // pages apart, so none merges with another).
    constexpr size_t stride = 2 * rcache_compat::gpu_page, count = 64;
    alignas(rcache_compat::gpu_page) static char pages[stride * count];
    static size_t next = 0;
    ucs_rcache_region_t *region = nullptr;
    if (cache && rcache_compat::get(cache, pages + stride * (next++ % count), 4096, &drain_marker,
                                    &region) == UCS_OK)
        ucs_rcache_region_put(cache, region);
}

int ucxr_exports(void)
{
    return exports;
}

int ucxr_export_failed(void)
{
    return export_failed;
}

void ucxr_close(void)
{
    if (cache)
        ucs_rcache_destroy(cache);
    cache = nullptr;
}

} // extern "C"
