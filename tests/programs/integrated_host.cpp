// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Host memory on an integrated GPU, as a communication library uses it:
// allocated with cudaHostAlloc, its device address taken with
// cudaHostGetDevicePointer (and cuMemHostGetDevicePointer for an interior
// byte), and gdrhook asked for the registration by either address.
//
// Prints integrated=0|1 (CU_DEVICE_ATTRIBUTE_INTEGRATED), device_differs=0|1
// (the device address is another address), and under the shim:
// get_host=RC get_device=RC get_interior=RC (gdrhook_get's answers),
// same_registration=0|1 (the three name one pinned range),
// device_base_matches=0|1 (base is told in the device address asked with),
// pins_during=N misses_during=N (the cache's counts across the gets),
// and where the device address differs, for a second allocation whose
// size is not a page multiple (its last page holds bytes past its end,
// inside its pinned range) get_last_byte=RC and get_device_end=RC:
// gdrhook_get by the device address of its last byte and of its end (one
// past the last byte, not memory of the allocation). Then, after
// cudaFreeHost of the first while the second lives, and an allocation of
// the same size that took the first's host address again
// (host_address_reused=0|1): get_after_free_0=RC, _1=RC and _2=RC (the
// first's old device address at offset 0, 4096 and its last byte) and
// get_other_alias=RC (the second's device address, still noted). Exit
// status 0 when every CUDA call succeeded.
#include "cuda_checks.h"

#include "include/gdrhook.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>

namespace {

constexpr size_t size = 2 << 20;

using GetFn = int (*)(const void *, size_t, gdrhook_registration *);
using PutFn = int (*)(gdrhook_registration *);
using StatsFn = int (*)(gdrhook_stats *, size_t);

uint64_t as_u64(const void *p)
{
    return reinterpret_cast<uintptr_t>(p);
}

} // namespace

int main()
{
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    CUdevice dev = 0;
    CHECK_CU(cuCtxGetDevice(&dev));
    int integrated = 0;
    CHECK_CU(cuDeviceGetAttribute(&integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED, dev));
    std::printf("integrated=%d\n", integrated);

    void *host = nullptr;
    if (cudaHostAlloc(&host, size, cudaHostAllocMapped) != cudaSuccess)
        return failed("cudaHostAlloc", CUDA_ERROR_UNKNOWN);
    void *device = nullptr;
    if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess)
        return failed("cudaHostGetDevicePointer", CUDA_ERROR_UNKNOWN);
    CUdeviceptr interior = 0;
    CHECK_CU(cuMemHostGetDevicePointer(&interior, static_cast<char *>(host) + 4096, 0));
    std::printf("device_differs=%d\n", device != host);

    auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    auto put = reinterpret_cast<PutFn>(dlsym(RTLD_DEFAULT, "gdrhook_put"));
    auto stats = reinterpret_cast<StatsFn>(dlsym(RTLD_DEFAULT, "gdrhook_get_stats"));
    if (get && put && stats) { // under the shim
        gdrhook_stats before{}, after{};
        stats(&before, sizeof(before));
        gdrhook_registration by_host{}, by_device{}, by_interior{};
        const int get_host = get(host, 4096, &by_host);
        const int get_device = get(device, 4096, &by_device);
        const int get_interior = get(reinterpret_cast<void *>(interior), 4096, &by_interior);
        stats(&after, sizeof(after));
        std::printf("get_host=%d get_device=%d get_interior=%d\n", get_host, get_device,
                    get_interior);
        const bool same = by_host.length == by_device.length &&
                          by_host.length == by_interior.length &&
                          by_host.dmabuf_fd == by_device.dmabuf_fd &&
                          by_host.dmabuf_fd == by_interior.dmabuf_fd &&
                          by_host.kmod_handle == by_device.kmod_handle;
        std::printf("same_registration=%d\n", get_host == 0 && same);
        std::printf("device_base_matches=%d\n", by_host.base == as_u64(host) &&
                                                    by_device.base == as_u64(device) &&
                                                    by_interior.base == as_u64(device));
        std::printf("pins_during=%llu misses_during=%llu\n",
                    static_cast<unsigned long long>(after.pins - before.pins),
                    static_cast<unsigned long long>(after.misses - before.misses));
        for (gdrhook_registration *r : {&by_host, &by_device, &by_interior})
            if (r->opaque[0] || r->opaque[2])
                put(r);
    }
    void *odd = nullptr;
    constexpr size_t odd_size = size - 100;
    if (cudaHostAlloc(&odd, odd_size, cudaHostAllocMapped) != cudaSuccess)
        return failed("cudaHostAlloc", CUDA_ERROR_UNKNOWN);
    void *odd_device = nullptr;
    if (cudaHostGetDevicePointer(&odd_device, odd, 0) != cudaSuccess)
        return failed("cudaHostGetDevicePointer", CUDA_ERROR_UNKNOWN);
    if (get && put && odd_device != odd) {
        gdrhook_registration last{}, end{};
        const int get_last = get(static_cast<char *>(odd_device) + odd_size - 1, 1, &last);
        const int get_end = get(static_cast<char *>(odd_device) + odd_size, 1, &end);
        std::printf("get_last_byte=%d get_device_end=%d\n", get_last, get_end);
        for (gdrhook_registration *r : {&last, &end})
            if (r->opaque[0] || r->opaque[2])
                put(r);
    }
    // The first allocation goes while the second's device address is still
    // noted, and the same size again gets its host address back (the
    // driver hands freed addresses out again): the old device address, at
    // any offset, names nothing now.
    if (cudaFreeHost(host) != cudaSuccess)
        return failed("cudaFreeHost", CUDA_ERROR_UNKNOWN);
    void *again = nullptr;
    if (cudaHostAlloc(&again, size, cudaHostAllocMapped) != cudaSuccess)
        return failed("cudaHostAlloc", CUDA_ERROR_UNKNOWN);
    std::printf("host_address_reused=%d\n", again == host);
    if (get) {
        const size_t offsets[] = {0, 4096, size - 1};
        for (size_t i = 0; i < 3; ++i) {
            gdrhook_registration stale{};
            const int rc = get(static_cast<char *>(device) + offsets[i], 1, &stale);
            std::printf("get_after_free_%zu=%d\n", i, rc);
            if (rc == 0)
                put(&stale);
        }
        gdrhook_registration other{};
        const int rc = get(odd_device, 1, &other);
        std::printf("get_other_alias=%d\n", rc);
        if (rc == 0)
            put(&other);
    }
    if (cudaFreeHost(again) != cudaSuccess || cudaFreeHost(odd) != cudaSuccess)
        return failed("cudaFreeHost", CUDA_ERROR_UNKNOWN);
    return 0;
}
