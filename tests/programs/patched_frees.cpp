// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Issue 23: a library that patches what dlsym hands out (UCX's bistro mode;
// here tests/programs/bistro_patcher.cpp) must see every call the program
// makes, whichever way the program resolved the function.
//
//   patched_frees PATCHER [rounds]
//
// Uses the patcher if it is already loaded (preloaded), else dlopen()s
// PATCHER as UCX loads its CUDA module; installs its patches; then, through
// each resolution path in turn (the exported symbols, dlsym on libcuda's
// handle, cuGetProcAddress_v2), allocates and frees device, stream-ordered,
// host and VMM memory `rounds` times. After each allocation it looks the
// address up in the patcher's registration cache and, when the shim is
// preloaded with a cache, with gdrhook_get(); the driver hands freed addresses back, so a
// cache that missed a free returns a stale registration.
//
// Prints, per path, `missed.PATH=` (calls of the patched functions the
// spies did not see, summed over the functions), `spy_stale.PATH=` and
// `gdrhook_stale.PATH=`; then `made.SYMBOL=` for each patched function over
// the whole run and `lookups=`. Exit status 0 when the run completed (the
// verdict is the caller's), 2 on a failed call.
#include "driver_api_table.h"
#include "include/gdrhook.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <string>
#include <vector>

namespace {

#define CHECK(call, name) COUNTED_CALL(made, call, name)

std::map<std::string, long> made;
long lookups = 0;

struct Patcher {
    int (*install)();
    int (*symbol_count)();
    const char *(*symbol)(int);
    long (*calls)(const char *);
    unsigned long long (*lookup)(CUdeviceptr);
};
Patcher patcher;

struct Gdrhook {
    decltype(&gdrhook_get) get = nullptr;
    decltype(&gdrhook_put) put = nullptr;
};
Gdrhook gdrhook;

bool find_patcher(const char *path)
{
    const bool preloaded = dlsym(RTLD_DEFAULT, "bistro_install") != nullptr;
    void *handle = preloaded ? RTLD_DEFAULT : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!preloaded && !handle) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return false;
    }
    patcher.install = reinterpret_cast<int (*)()>(dlsym(handle, "bistro_install"));
    patcher.symbol_count = reinterpret_cast<int (*)()>(dlsym(handle, "bistro_symbol_count"));
    patcher.symbol = reinterpret_cast<const char *(*)(int)>(dlsym(handle, "bistro_symbol"));
    patcher.calls = reinterpret_cast<long (*)(const char *)>(dlsym(handle, "bistro_calls"));
    patcher.lookup =
        reinterpret_cast<unsigned long long (*)(CUdeviceptr)>(dlsym(handle, "bistro_lookup"));
    return patcher.install && patcher.symbol_count && patcher.symbol && patcher.calls &&
           patcher.lookup;
}

bool fill(const std::string &path, DriverApi &api)
{
    if (path == "symbol") {
        fill_by_linked_symbols(api);
        return true;
    }
    if (path == "dlsym")
        return fill_by_symbol(api, libcuda_dlsym);
    return resolve_proc_address_v2() && fill_by_base_name(api, proc_lookup_v2);
}

struct Stale {
    long spy = 0;
    long gdrhook = 0;
};

// Looks `p` up in both caches and compares with the driver's id now.
void look_up(CUdeviceptr p, size_t size, Stale &stale)
{
    unsigned long long now = 0;
    if (cuPointerGetAttribute(&now, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) != CUDA_SUCCESS) {
        fprintf(stderr, "no buffer id for 0x%llx\n", static_cast<unsigned long long>(p));
        exit(2);
    }
    ++lookups;
    if (patcher.lookup(p) != now)
        ++stale.spy;
    if (gdrhook.get) {
        gdrhook_registration reg;
        int rc = gdrhook.get(reinterpret_cast<void *>(p), size, &reg);
        if (rc == -ENODEV) { // the shim has no cache (GDRHOOK_DISABLE=1)
            gdrhook.get = nullptr;
            return;
        }
        if (rc != 0) {
            fprintf(stderr, "gdrhook_get failed: %d\n", rc);
            exit(2);
        }
        if (reg.buffer_id != now)
            ++stale.gdrhook;
        gdrhook.put(&reg);
    }
}

void exercise(const DriverApi &api, int rounds, Stale &stale)
{
    for (int i = 0; i < rounds; ++i) {
        CUdeviceptr p = 0;
        CHECK(api.mem_alloc(&p, 1 << 20), "cuMemAlloc_v2");
        look_up(p, 1 << 20, stale);
        CHECK(api.mem_free(p), "cuMemFree_v2");

        CHECK(api.mem_alloc_async(&p, 1 << 16, nullptr), "cuMemAllocAsync");
        // Stream-ordered memory is valid once its stream has passed it.
        CHECK(cuCtxSynchronize(), "cuCtxSynchronize");
        look_up(p, 1 << 16, stale);
        CHECK(api.mem_free_async(p, nullptr), "cuMemFreeAsync");

        // The forms of binaries built before CUDA 3.2, which UCX hooks too.
        CUdeviceptr_v1 small = 0;
        CHECK(api.mem_alloc_v1(&small, 4096), "cuMemAlloc");
        look_up(small, 4096, stale);
        CHECK(api.mem_free_v1(small), "cuMemFree");

        void *host = nullptr;
        CHECK(api.mem_alloc_host(&host, 4096), "cuMemAllocHost_v2");
        CHECK(api.mem_free_host(host), "cuMemFreeHost");

        if (const char *failed = vmm_round_trip(api, made)) {
            fprintf(stderr, "%s failed\n", failed);
            exit(2);
        }
    }
}

std::map<std::string, long> spy_counts()
{
    std::map<std::string, long> counts;
    for (int i = 0; i < patcher.symbol_count(); ++i)
        counts[patcher.symbol(i)] = patcher.calls(patcher.symbol(i));
    return counts;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: patched_frees PATCHER [rounds]\n");
        return 64;
    }
    const int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (!find_patcher(argv[1]))
        return 2;
    int installed = patcher.install();
    printf("installed=%d\n", installed);
    if (installed != patcher.symbol_count())
        return 2;
    gdrhook.get = reinterpret_cast<decltype(gdrhook.get)>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    gdrhook.put = reinterpret_cast<decltype(gdrhook.put)>(dlsym(RTLD_DEFAULT, "gdrhook_put"));

    bool initialized = false;
    for (const char *path : {"symbol", "dlsym", "proc"}) {
        DriverApi api{};
        if (!fill(path, api))
            return 2;
        if (!initialized) {
            CHECK(api.init(0), "cuInit");
            CUcontext primary = nullptr;
            CHECK(api.primary_retain(&primary, 0), "cuDevicePrimaryCtxRetain");
            CHECK(api.ctx_set_current(primary), "cuCtxSetCurrent");
            initialized = true;
        }
        std::map<std::string, long> made_before = made, seen_before = spy_counts();
        Stale stale;
        exercise(api, rounds, stale);
        long missed = 0;
        for (const auto &[symbol, seen] : spy_counts()) {
            long by_path = made[symbol] - made_before[symbol];
            long seen_by_path = seen - seen_before[symbol];
            if (by_path != seen_by_path)
                fprintf(stderr, "%s: %s called %ld times, the spy saw %ld\n", path, symbol.c_str(),
                        by_path, seen_by_path);
            missed += labs(by_path - seen_by_path);
        }
        printf("missed.%s=%ld spy_stale.%s=%ld gdrhook_stale.%s=%ld\n", path, missed, path,
               stale.spy, path, stale.gdrhook);
    }
    for (int i = 0; i < patcher.symbol_count(); ++i)
        printf("made.%s=%ld\n", patcher.symbol(i), made[patcher.symbol(i)]);
    printf("lookups=%ld\n", lookups);
    return 0;
}
