// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// When the UCX bridge finds libucm, in a program that does not link UCX
// (run under the shim over the fake driver):
//
//   ucm_loading first_call  makes its first CUDA calls, then says whether
//                           libucm.so.0 is loaded (libucm_loaded=0|1; with
//                           GDRHOOK_UCX=on the shim loads it there); where
//                           it is, listens to UCX's CUDA free events and
//                           frees a buffer (free_events=N over it)
//   ucm_loading late        makes its first CUDA calls, then loads
//                           UCX (libucs.so.0, and with it libucm.so.0)
//                           itself, listens, frees a buffer
//                           (free_events_before_lookup=N), looks a CUDA
//                           function up with dlsym, as UCX's CUDA module
//                           does as it loads, and frees another
//                           (free_events_after_lookup=N)
//   ucm_loading order       (GDRHOOK_UCX=on, GDRHOOK_PIN=alloc) listens to
//                           UCX's CUDA allocation and free events and, in
//                           its handler, reads gdrhook's counters
//                           (gdrhook_get_stats, as a library would): over
//                           each of `rounds` buffers, whether UCX heard of
//                           the allocation, whether gdrhook had pinned it
//                           by then and by the time the call returned,
//                           whether UCX heard of the free, and whether
//                           gdrhook had unpinned it by then
//
// UCX's functions are found with dlsym, never linked: the program is one
// UCX is loaded into. Exit status 0 when every call succeeded.
#include "include/gdrhook.h"
#include "tests/programs/cuda_checks.h"

#include <cuda.h>
#include <ucm/api/ucm.h>

#include <cstdio>
#include <cstring>
#include <dlfcn.h>

namespace {

constexpr size_t buffer_bytes = 4 << 20;
CUdeviceptr watched = 0; // the buffer whose free events are counted
int free_events = 0;

void count_free(ucm_event_type_t type, ucm_event_t *event, void *)
{
    const auto start = reinterpret_cast<CUdeviceptr>(event->mem_type.address);
    if (type == UCM_EVENT_MEM_TYPE_FREE && watched >= start &&
        watched < start + event->mem_type.size)
        ++free_events;
}

bool libucm_loaded()
{
    void *library = dlopen("libucm.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (library)
        dlclose(library);
    return library != nullptr;
}

// Listens to UCX's CUDA free events, as UCX's CUDA memory domains do.
int listen(void *library)
{
    using SetHandler = ucs_status_t (*)(int, int, ucm_event_callback_t, void *);
    auto set_handler = reinterpret_cast<SetHandler>(dlsym(library, "ucm_set_event_handler"));
    if (!set_handler || set_handler(UCM_EVENT_MEM_TYPE_FREE, 1000, count_free, nullptr) != UCS_OK) {
        std::printf("ucm_set_event_handler failed\n");
        return 1;
    }
    return 0;
}

// Allocates and frees a buffer; returns the free events heard over it.
int free_events_of_one_free(int &events)
{
    CHECK_CU(cuMemAlloc(&watched, buffer_bytes));
    free_events = 0;
    CHECK_CU(cuMemFree(watched));
    events = free_events;
    return 0;
}

int first_call()
{
    const bool loaded = libucm_loaded();
    std::printf("libucm_loaded=%d\n", int(loaded));
    if (!loaded)
        return 0;
    void *library = dlopen("libucm.so.0", RTLD_LAZY | RTLD_NOLOAD);
    int events = 0;
    if (listen(library) || free_events_of_one_free(events))
        return 1;
    std::printf("free_events=%d\n", events);
    return 0;
}

// What gdrhook counts now (0s where it cannot say).
gdrhook_stats gdrhook_counts()
{
    static auto get =
        reinterpret_cast<decltype(&gdrhook_get_stats)>(dlsym(RTLD_DEFAULT, "gdrhook_get_stats"));
    gdrhook_stats s{};
    if (get)
        get(&s, sizeof s);
    return s;
}

// One buffer's allocation and free, as the handler saw them.
struct Heard {
    bool expecting_alloc = false;
    CUdeviceptr alloc_at = 0; // the address of the ALLOC event heard
    uint64_t pins_at_alloc = 0;
    bool free_heard = false;
    uint64_t unpins_at_free = 0;
};
Heard heard;

void observe_order(ucm_event_type_t type, ucm_event_t *event, void *)
{
    const auto start = reinterpret_cast<CUdeviceptr>(event->mem_type.address);
    if (type == UCM_EVENT_MEM_TYPE_ALLOC && heard.expecting_alloc) {
        heard.expecting_alloc = false;
        heard.alloc_at = start;
        heard.pins_at_alloc = gdrhook_counts().pins;
    }
    if (type == UCM_EVENT_MEM_TYPE_FREE && watched >= start &&
        watched < start + event->mem_type.size) {
        heard.free_heard = true;
        heard.unpins_at_free = gdrhook_counts().unpins;
    }
}

int order()
{
    constexpr int rounds = 8;
    void *library = dlopen("libucm.so.0", RTLD_LAZY | RTLD_NOLOAD);
    using SetHandler = ucs_status_t (*)(int, int, ucm_event_callback_t, void *);
    auto set_handler =
        library ? reinterpret_cast<SetHandler>(dlsym(library, "ucm_set_event_handler")) : nullptr;
    if (!set_handler || set_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 1000,
                                    observe_order, nullptr) != UCS_OK) {
        std::printf("libucm not loaded, or ucm_set_event_handler failed\n");
        return 1;
    }
    int alloc_heard = 0, pinned_when_ucx_heard = 0, pinned_by_return = 0;
    int free_heard = 0, unpinned_when_ucx_heard = 0;
    for (int round = 0; round < rounds; ++round) {
        heard = Heard{};
        const uint64_t pins_before = gdrhook_counts().pins;
        heard.expecting_alloc = true;
        CHECK_CU(cuMemAlloc(&watched, buffer_bytes));
        const bool heard_this = heard.alloc_at == watched;
        alloc_heard += heard_this;
        pinned_when_ucx_heard += heard_this && heard.pins_at_alloc > pins_before;
        pinned_by_return += gdrhook_counts().pins > pins_before;
        const uint64_t unpins_before = gdrhook_counts().unpins;
        CHECK_CU(cuMemFree(watched));
        free_heard += heard.free_heard;
        unpinned_when_ucx_heard += heard.free_heard && heard.unpins_at_free > unpins_before;
    }
    std::printf("rounds=%d\nalloc_heard=%d\npinned_when_ucx_heard=%d\npinned_by_return=%d\n"
                "free_heard=%d\nunpinned_when_ucx_heard=%d\n",
                rounds, alloc_heard, pinned_when_ucx_heard, pinned_by_return, free_heard,
                unpinned_when_ucx_heard);
    return 0;
}

int late()
{
    std::printf("libucm_loaded=%d\n", int(libucm_loaded()));
    // As a library that brings UCX with it loads it: libucs, which links
    // libucm (and which libucm's handlers need).
    if (!dlopen("libucs.so.0", RTLD_NOW | RTLD_GLOBAL)) {
        std::printf("dlopen(libucs.so.0) failed: %s\n", dlerror());
        return 1;
    }
    void *library = dlopen("libucm.so.0", RTLD_LAZY | RTLD_NOLOAD);
    int before = 0, after = 0;
    if (listen(library) || free_events_of_one_free(before))
        return 1;
    std::printf("free_events_before_lookup=%d\n", before);
    if (!dlsym(RTLD_DEFAULT, "cuMemFree_v2")) {
        std::printf("dlsym(cuMemFree_v2) failed\n");
        return 1;
    }
    if (free_events_of_one_free(after))
        return 1;
    std::printf("free_events_after_lookup=%d\n", after);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUdevice dev;
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CUdeviceptr first = 0; // the first call the shim sees
    CHECK_CU(cuMemAlloc(&first, buffer_bytes));
    CHECK_CU(cuMemFree(first));
    if (!std::strcmp(mode, "first_call"))
        return first_call();
    if (!std::strcmp(mode, "late"))
        return late();
    if (!std::strcmp(mode, "order"))
        return order();
    std::fprintf(stderr, "usage: ucm_loading first_call|late|order\n");
    return 2;
}
