// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Two GPUs in one process, driver API (built by tests/gpu/build_programs.sh;
// tests/gpu/run.sh runs it only where two or more GPUs exist).
//
//   two_gpus peer   peer access both ways (cuCtxEnablePeerAccess): device
//                   buffers on both GPUs filled on one, copied to the other
//                   and back, checked on the host; VMM memory on GPU 1 that
//                   GPU 0 may read and write (cuMemSetAccess), copied into
//                   from GPU 0; every buffer freed in its own context.
//   two_gpus pool   a stream-ordered pool on GPU 0 that GPU 1 may use
//                   (cuMemPoolSetAccess): allocated on GPU 0's stream,
//                   written and read on GPU 1's stream, freed on GPU 1's
//                   stream, then the pool trimmed and destroyed.
//
// Prints a checksum, "frees_made=N" (every deallocation the program made,
// pool trim and destroy included: each is a free event in the shim's log)
// and, on stderr, the device memory in use on both GPUs at the end minus
// at the start.
#include "driver_program.h"

#include <cstring>
#include <vector>

namespace {

struct Gpus {
    CUdevice device[2];
    CUcontext context[2];
};

Gpus retain_two()
{
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    if (count < 2) {
        fprintf(stderr, "two_gpus: %d GPU(s); needs two\n", count);
        exit(1);
    }
    Gpus gpus;
    for (int i = 0; i < 2; ++i) {
        CHECK(cuDeviceGet(&gpus.device[i], i));
        CHECK(cuDevicePrimaryCtxRetain(&gpus.context[i], gpus.device[i]));
    }
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    return gpus;
}

void release(const Gpus &gpus)
{
    CHECK(cuCtxSetCurrent(nullptr));
    for (CUdevice device : gpus.device)
        CHECK(cuDevicePrimaryCtxRelease(device));
}

/// Device memory in use on both GPUs; GPU 0's context is current after.
long long used_on_both(const Gpus &gpus)
{
    long long used = 0;
    for (CUcontext context : gpus.context) {
        CHECK(cuCtxSetCurrent(context));
        used += device_bytes_in_use();
    }
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    return used;
}

/// Sums the 32-bit words of a device buffer (any context may be current:
/// unified addressing finds the owner).
unsigned long long host_sum(CUdeviceptr p, size_t words)
{
    std::vector<unsigned> host(words);
    CHECK(cuMemcpyDtoH(host.data(), p, words * sizeof(unsigned)));
    unsigned long long sum = 0;
    for (unsigned v : host)
        sum += v;
    return sum;
}

int peer(const Gpus &gpus)
{
    int can[2] = {0, 0};
    CHECK(cuDeviceCanAccessPeer(&can[0], gpus.device[0], gpus.device[1]));
    CHECK(cuDeviceCanAccessPeer(&can[1], gpus.device[1], gpus.device[0]));
    if (!can[0] || !can[1]) {
        fprintf(stderr, "two_gpus: no peer access between GPU 0 and GPU 1\n");
        return 1;
    }
    for (int i = 0; i < 2; ++i) {
        CHECK(cuCtxSetCurrent(gpus.context[i]));
        CHECK(cuCtxEnablePeerAccess(gpus.context[1 - i], 0));
    }
    CHECK(cuCtxSetCurrent(gpus.context[0]));

    constexpr size_t bytes = 8 << 20;
    constexpr size_t words = bytes / sizeof(unsigned);
    unsigned long long checksum = 0;
    bool wrong = false;
    for (unsigned i = 0; i < 20; ++i) {
        CUdeviceptr on0, back0, on1;
        CHECK(cuCtxSetCurrent(gpus.context[0]));
        CHECK(cuMemAlloc(&on0, bytes));
        CHECK(cuMemAlloc(&back0, bytes));
        CHECK(cuMemsetD32(on0, i + 1, words));
        CHECK(cuCtxSetCurrent(gpus.context[1]));
        CHECK(cuMemAlloc(&on1, bytes));
        CHECK(cuMemcpyPeer(on1, gpus.context[1], on0, gpus.context[0], bytes)); // 0 -> 1
        CHECK(cuMemsetD32(on0, 0, words));
        CHECK(cuMemcpyDtoD(back0, on1, bytes)); // 1 -> 0, GPU 1 current
        const unsigned long long sum = host_sum(back0, words);
        wrong |= sum != static_cast<unsigned long long>(i + 1) * words;
        checksum += sum;
        FREE(cuMemFree(on1));
        CHECK(cuCtxSetCurrent(gpus.context[0]));
        FREE(cuMemFree(back0));
        FREE(cuMemFree(on0));
    }

    // VMM memory on GPU 1 that GPU 0 may use too.
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = gpus.device[1];
    size_t granule = 0;
    CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const size_t size = (bytes + granule - 1) / granule * granule;
    CUmemAccessDesc access[2] = {};
    for (int i = 0; i < 2; ++i) {
        access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[i].location.id = gpus.device[i];
        access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    for (unsigned i = 0; i < 5; ++i) {
        CUdeviceptr va, source;
        CUmemGenericAllocationHandle handle;
        CHECK(cuCtxSetCurrent(gpus.context[1]));
        CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
        CHECK(cuMemCreate(&handle, size, &prop, 0));
        CHECK(cuMemMap(va, size, 0, handle, 0));
        CHECK(cuMemSetAccess(va, size, access, 2));
        CHECK(cuCtxSetCurrent(gpus.context[0]));
        CHECK(cuMemAlloc(&source, size));
        CHECK(cuMemsetD32(source, 100 + i, size / sizeof(unsigned)));
        CHECK(cuMemcpyDtoD(va, source, size)); // GPU 0 writes GPU 1's memory
        const unsigned long long sum = host_sum(va, size / sizeof(unsigned));
        wrong |= sum != static_cast<unsigned long long>(100 + i) * (size / sizeof(unsigned));
        checksum += sum;
        FREE(cuMemFree(source));
        CHECK(cuCtxSetCurrent(gpus.context[1]));
        FREE(cuMemUnmap(va, size));
        FREE(cuMemRelease(handle));
        FREE(cuMemAddressFree(va, size));
    }

    for (int i = 0; i < 2; ++i) {
        CHECK(cuCtxSetCurrent(gpus.context[i]));
        CHECK(cuCtxDisablePeerAccess(gpus.context[1 - i]));
    }
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    printf("checksum=%llu\n", checksum);
    return wrong ? 1 : 0;
}

int pool(const Gpus &gpus)
{
    int supported = 0;
    CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                               gpus.device[0]));
    if (!supported) {
        fprintf(stderr, "two_gpus: GPU 0 has no stream-ordered pools\n");
        return 1;
    }
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = gpus.device[0];
    CUmemoryPool shared;
    CHECK(cuMemPoolCreate(&shared, &props));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpus.device[1];
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemPoolSetAccess(shared, &access, 1));

    CUstream stream[2];
    CUevent allocated;
    CHECK(cuCtxSetCurrent(gpus.context[1]));
    CHECK(cuStreamCreate(&stream[1], CU_STREAM_NON_BLOCKING));
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    CHECK(cuStreamCreate(&stream[0], CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&allocated, CU_EVENT_DISABLE_TIMING));

    constexpr size_t bytes = 4 << 20;
    constexpr size_t words = bytes / sizeof(unsigned);
    std::vector<unsigned> host(words);
    unsigned long long checksum = 0;
    bool wrong = false;
    for (unsigned i = 0; i < 20; ++i) {
        CUdeviceptr p;
        CHECK(cuCtxSetCurrent(gpus.context[0]));
        CHECK(cuMemAllocFromPoolAsync(&p, bytes, shared, stream[0]));
        CHECK(cuMemsetD32Async(p, 7, words, stream[0]));
        CHECK(cuEventRecord(allocated, stream[0]));
        CHECK(cuCtxSetCurrent(gpus.context[1]));
        CHECK(cuStreamWaitEvent(stream[1], allocated, 0));
        CHECK(cuMemsetD32Async(p, i + 1, words, stream[1])); // GPU 1 writes
        CHECK(cuMemcpyDtoHAsync(host.data(), p, bytes, stream[1]));
        FREE(cuMemFreeAsync(p, stream[1])); // freed in GPU 1's stream order
        CHECK(cuStreamSynchronize(stream[1]));
        unsigned long long sum = 0;
        for (unsigned v : host)
            sum += v;
        wrong |= sum != static_cast<unsigned long long>(i + 1) * words;
        checksum += sum;
    }
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    CHECK(cuStreamSynchronize(stream[0]));
    FREE(cuMemPoolTrimTo(shared, 0));
    CHECK(cuEventDestroy(allocated));
    CHECK(cuStreamDestroy(stream[0]));
    CHECK(cuCtxSetCurrent(gpus.context[1]));
    CHECK(cuStreamDestroy(stream[1]));
    CHECK(cuCtxSetCurrent(gpus.context[0]));
    FREE(cuMemPoolDestroy(shared));
    printf("checksum=%llu\n", checksum);
    return wrong ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
    const bool is_peer = argc == 2 && strcmp(argv[1], "peer") == 0;
    const bool is_pool = argc == 2 && strcmp(argv[1], "pool") == 0;
    if (!is_peer && !is_pool) {
        fprintf(stderr, "usage: two_gpus peer|pool\n");
        return 2;
    }
    const Gpus gpus = retain_two();
    const long long used_at_start = used_on_both(gpus);
    mark();
    const int rc = is_peer ? peer(gpus) : pool(gpus);
    mark();
    report_used_delta(used_at_start, [&] { return used_on_both(gpus); });
    release(gpus);
    printf("frees_made=%d\n", frees_made);
    return rc;
}
