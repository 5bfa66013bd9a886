// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Allocates and frees through every entry point the shim intercepts, with
// the functions resolved through the path named on the command line:
//
//   symbol         the exported symbols (linked with -lcuda)
//   dlsym          dlopen("libcuda.so.1") + dlsym of each versioned symbol
//   proc           cuGetProcAddress_v2 (found with dlsym), which is first
//                  asked for itself and the answer used for the rest
//   proc_v1        the older cuGetProcAddress (no status argument)
//   runtime_entry  cudaGetDriverEntryPointByVersion of the shared runtime
//   runtime        the runtime's own cudaMalloc / cudaFree family
//   threads        8 threads x 1000 alloc/free pairs through cuGetProcAddress
//   fork           allocations on both sides of a fork()
//
// The sequence for the first five is the same; tests/shim/test_free_paths.cpp
// knows it. The program also checks, against the fake driver's counters,
// that every call reached the driver exactly once. Exit status 0 on success.
#include "driver_api_table.h"

#define CUDA_ENABLE_DEPRECATED 1
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::map<std::string, long> calls_made;

// The address each event of exercise() must carry, in order: what the
// program allocated or freed (for a pool or a context, its handle).
std::vector<uint64_t> logged_addresses;

void logged(std::initializer_list<uint64_t> addresses)
{
    logged_addresses.insert(logged_addresses.end(), addresses);
}

template <typename T> uint64_t as_address(T *pointer)
{
    return reinterpret_cast<uint64_t>(pointer);
}

#define CHECK(call, name) COUNTED_CALL(calls_made, call, name)

void exercise(const DriverApi &api)
{
    CHECK(api.init(0), "cuInit");
    CUcontext primary = nullptr;
    CHECK(api.primary_retain(&primary, 0), "cuDevicePrimaryCtxRetain");
    CHECK(api.ctx_set_current(primary), "cuCtxSetCurrent");

    // Plain allocations, and the VA reuse that makes stale caches dangerous.
    CUdeviceptr a = 0, b = 0;
    CHECK(api.mem_alloc(&a, 1 << 20), "cuMemAlloc_v2");
    CHECK(api.mem_free(a), "cuMemFree_v2");
    CHECK(api.mem_alloc(&b, 1 << 20), "cuMemAlloc_v2");
    if (a != b) {
        fprintf(stderr, "expected the freed address back\n");
        exit(2);
    }
    CHECK(api.mem_free(b), "cuMemFree_v2");
    logged({a, a, b, b});

    size_t pitch = 0;
    CHECK(api.mem_alloc_pitch(&a, &pitch, 1000, 10, 4), "cuMemAllocPitch_v2");
    CHECK(api.mem_free(a), "cuMemFree_v2");
    logged({a, a});

    CHECK(api.mem_alloc_async(&a, 4096, nullptr), "cuMemAllocAsync");
    CHECK(api.mem_free_async(a, nullptr), "cuMemFreeAsync");
    logged({a, a});
    CHECK(api.mem_alloc_async_ptsz(&a, 4096, nullptr), "cuMemAllocAsync_ptsz");
    CHECK(api.mem_free_async_ptsz(a, nullptr), "cuMemFreeAsync_ptsz");
    logged({a, a});

    CUmemoryPool pool = nullptr;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CHECK(api.pool_create(&pool, &props), "cuMemPoolCreate");
    CHECK(api.mem_alloc_from_pool(&a, 8192, pool, nullptr), "cuMemAllocFromPoolAsync");
    CHECK(api.mem_free_async(a, nullptr), "cuMemFreeAsync");
    CHECK(api.pool_trim(pool, 0), "cuMemPoolTrimTo");
    CHECK(api.pool_destroy(pool), "cuMemPoolDestroy");
    logged({a, a, as_address(pool), as_address(pool)});

    CHECK(api.mem_alloc_managed(&a, 8192, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
    CHECK(api.mem_free(a), "cuMemFree_v2");
    logged({a, a});

    void *host = nullptr;
    CHECK(api.mem_alloc_host(&host, 4096), "cuMemAllocHost_v2");
    CHECK(api.mem_free_host(host), "cuMemFreeHost");
    logged({as_address(host), as_address(host)});
    CHECK(api.mem_host_alloc(&host, 4096, 0), "cuMemHostAlloc");
    CHECK(api.mem_free_host(host), "cuMemFreeHost");
    logged({as_address(host), as_address(host)});
    static char page[8192] __attribute__((aligned(4096)));
    CHECK(api.host_register(page, sizeof(page), 0), "cuMemHostRegister_v2");
    CHECK(api.host_unregister(page), "cuMemHostUnregister");
    logged({as_address(page), as_address(page)});

    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle = 0;
    if (const char *failed = vmm_round_trip(api, calls_made, &va, &handle)) {
        fprintf(stderr, "%s failed\n", failed);
        exit(2);
    }
    logged({handle, va, va, handle, va});

    CUipcMemHandle ipc{};
    CUdeviceptr imported = 0;
    CHECK(api.mem_alloc(&a, 65536), "cuMemAlloc_v2");
    CHECK(api.ipc_get(&ipc, a), "cuIpcGetMemHandle");
    CHECK(api.ipc_open(&imported, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
          "cuIpcOpenMemHandle_v2");
    CHECK(api.ipc_close(imported), "cuIpcCloseMemHandle");
    CHECK(api.mem_free(a), "cuMemFree_v2");
    logged({a, imported, imported, a});

    // A free the driver refuses is logged with its result.
    ++calls_made["cuMemFree_v2"];
    if (api.mem_free(0xdead0000) == CUDA_SUCCESS) {
        fprintf(stderr, "the bogus free succeeded\n");
        exit(2);
    }
    logged({0xdead0000});

    // Freeing null frees nothing: no event, whatever the driver answers.
    ++calls_made["cuMemFree_v2"];
    api.mem_free(0);

    // The entry points of binaries built before CUDA 3.2: 32-bit sizes and
    // device pointers.
    CUdeviceptr_v1 small = 0;
    CHECK(api.mem_alloc_v1(&small, 4096), "cuMemAlloc");
    CHECK(api.mem_free_v1(small), "cuMemFree");
    logged({small, small});
    unsigned int pitch_v1 = 0;
    CHECK(api.mem_alloc_pitch_v1(&small, &pitch_v1, 1000, 10, 4), "cuMemAllocPitch");
    CHECK(api.mem_free_v1(small), "cuMemFree");
    logged({small, small});
    CHECK(api.mem_alloc_host_v1(&host, 4096), "cuMemAllocHost");
    CHECK(api.mem_free_host(host), "cuMemFreeHost");
    logged({as_address(host), as_address(host)});

    CUcontext own = nullptr;
    CHECK(api.ctx_create(&own, 0, 0), "cuCtxCreate_v2");
    CHECK(api.mem_alloc(&a, 65536), "cuMemAlloc_v2");
    CHECK(api.ctx_destroy(own), "cuCtxDestroy_v2");
    CHECK(api.ctx_set_current(primary), "cuCtxSetCurrent");
    logged({a, as_address(own)});

    CHECK(api.mem_alloc(&a, 131072), "cuMemAlloc_v2");
    CHECK(api.primary_release(0), "cuDevicePrimaryCtxRelease_v2");
    logged({a, as_address(primary)});
}

// Each call made must have reached the fake driver exactly once.
int check_driver_counts()
{
    auto count =
        reinterpret_cast<long (*)(const char *)>(dlsym(RTLD_DEFAULT, "fake_cuda_call_count"));
    if (!count)
        return 0; // the real driver: nothing to compare with
    int mismatches = 0;
    for (const auto &[name, made] : calls_made) {
        long seen = count(name.c_str());
        if (name != "cuCtxSetCurrent" && seen != made) {
            fprintf(stderr, "%s: called %ld times, driver saw %ld\n", name.c_str(), made, seen);
            ++mismatches;
        }
    }
    return mismatches ? 3 : 0;
}

decltype(&cuGetProcAddress) proc_address_v1;

void *proc_lookup_v1(const char *base, int version, bool per_thread)
{
    void *fn = nullptr;
    proc_address_v1(base, &fn, version ? version : 11030,
                    per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_DEFAULT);
    return fn;
}

void *runtime_entry_lookup(const char *base, int version, bool per_thread)
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    cudaGetDriverEntryPointByVersion(
        base, &fn, version ? version : 13000,
        per_thread ? cudaEnablePerThreadDefaultStream : cudaEnableDefault, &status);
    return fn;
}

int run_runtime()
{
    // The runtime frees through driver functions it resolved itself: each
    // cudaFree is one deallocation, cudaFree(nullptr) none.
    if (cudaSetDevice(0) != cudaSuccess)
        return 2;
    void *p = nullptr;
    for (int i = 0; i < 3; ++i) {
        if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return 2;
    }
    if (cudaFree(nullptr) != cudaSuccess)
        return 2;
    if (cudaMallocAsync(&p, 4096, nullptr) != cudaSuccess ||
        cudaFreeAsync(p, nullptr) != cudaSuccess)
        return 2;
    if (cudaMallocHost(&p, 4096) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
        return 2;
    if (cudaMalloc(&p, 65536) != cudaSuccess || cudaDeviceReset() != cudaSuccess)
        return 2;
    return 0;
}

int run_threads()
{
    if (!resolve_proc_address_v2())
        return 2;
    DriverApi api{};
    if (!fill_by_base_name(api, proc_lookup_v2))
        return 2;
    CHECK(api.init(0), "cuInit");
    CUcontext primary = nullptr;
    CHECK(api.primary_retain(&primary, 0), "cuDevicePrimaryCtxRetain");
    const int threads = 8, iterations = 1000;
    std::vector<std::thread> workers;
    int failures[threads] = {};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            api.ctx_set_current(primary);
            for (int i = 0; i < iterations; ++i) {
                CUdeviceptr p = 0;
                size_t size = 4096u * (1 + (i + t) % 7);
                if (api.mem_alloc(&p, size) != CUDA_SUCCESS || api.mem_free(p) != CUDA_SUCCESS)
                    ++failures[t];
            }
        });
    }
    for (auto &w : workers)
        w.join();
    for (int f : failures)
        if (f)
            return 2;
    return 0;
}

int run_fork()
{
    if (!resolve_proc_address_v2())
        return 2;
    DriverApi api{};
    if (!fill_by_base_name(api, proc_lookup_v2))
        return 2;
    CHECK(api.init(0), "cuInit");
    CUcontext primary = nullptr;
    CHECK(api.primary_retain(&primary, 0), "cuDevicePrimaryCtxRetain");
    CHECK(api.ctx_set_current(primary), "cuCtxSetCurrent");
    CUdeviceptr kept = 0;
    CHECK(api.mem_alloc(&kept, 1 << 20), "cuMemAlloc_v2");
    // A busy thread at the time of the fork, as in real programs.
    std::thread busy([&] {
        api.ctx_set_current(primary);
        for (int i = 0; i < 200; ++i) {
            CUdeviceptr p = 0;
            api.mem_alloc(&p, 8192);
            api.mem_free(p);
        }
    });
    pid_t child = fork();
    if (child == 0) {
        // The driver refuses a child forked after cuInit (every call answers
        // CUDA_ERROR_NOT_INITIALIZED): the shim must hand those answers back
        // unchanged and log the attempts in the child's own log.
        auto refused = [](const char *call, CUresult rc) {
            if (rc != CUDA_ERROR_NOT_INITIALIZED)
                fprintf(stderr, "child: %s answered %d, not CUDA_ERROR_NOT_INITIALIZED\n", call,
                        rc);
            return rc == CUDA_ERROR_NOT_INITIALIZED;
        };
        bool as_the_driver_says = refused("cuCtxSetCurrent", api.ctx_set_current(primary));
        for (int i = 0; i < 3; ++i) {
            CUdeviceptr p = 0;
            as_the_driver_says &= refused("cuMemAlloc_v2", api.mem_alloc(&p, 4096));
        }
        as_the_driver_says &= refused("cuMemFree_v2", api.mem_free(kept));
        exit(as_the_driver_says ? 0 : 2); // the child's pending events are flushed at exit
    }
    busy.join();
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(api.mem_free(kept), "cuMemFree_v2");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s symbol|dlsym|proc|proc_v1|runtime_entry|runtime|threads|fork\n",
                argv[0]);
        return 64;
    }
    std::string mode = argv[1];
    DriverApi api{};
    bool filled = false;
    if (mode == "symbol") {
        fill_by_linked_symbols(api);
        filled = true;
    } else if (mode == "dlsym") {
        filled = libcuda_handle() && fill_by_symbol(api, libcuda_dlsym);
    } else if (mode == "proc") {
        filled = resolve_proc_address_v2() && fill_by_base_name(api, proc_lookup_v2);
    } else if (mode == "proc_v1") {
        proc_address_v1 =
            reinterpret_cast<decltype(&cuGetProcAddress)>(libcuda_dlsym("cuGetProcAddress"));
        filled = proc_address_v1 && fill_by_base_name(api, proc_lookup_v1);
    } else if (mode == "runtime_entry") {
        filled = fill_by_base_name(api, runtime_entry_lookup);
    } else if (mode == "runtime") {
        return run_runtime();
    } else if (mode == "threads") {
        return run_threads();
    } else if (mode == "fork") {
        return run_fork();
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
        return 64;
    }
    if (!filled)
        return 2;
    exercise(api);
    for (uint64_t address : logged_addresses)
        printf("logged_addr=0x%llx\n", static_cast<unsigned long long>(address));
    return check_driver_counts();
}
