// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A program that reads CU_POINTER_ATTRIBUTE_SYNC_MEMOPS of its own 2 MiB
// allocation, then asks for the allocation's registration twice, as a
// library does before it sends from it (library_registration.h). Prints:
//   alloc_sync=N    SYNC_MEMOPS as the program reads it after cuMemAlloc
// with the argument `capture`, first a get inside a global stream capture:
//   capture_get=RC  what gdrhook_get() answered there (-1: no shim)
//   capture_sets=N  cuPointerSetAttribute calls it made
//   end_capture=RC  what cuStreamEndCapture answered
// then:
//   registered=N    1 when both gdrhook_get() calls succeeded (0: no shim)
//   first_sync=N    SYNC_MEMOPS once the first gdrhook_get() returned
//   first_sets=N    cuPointerSetAttribute calls up to the first return
//   second_sets=N   those made by the second gdrhook_get()
// (the call counts are the fake driver's, -1 on a GPU).
#include "cuda_checks.h"
#include "library_registration.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {

long set_calls()
{
    using Count = long (*)(const char *);
    static const auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "fake_cuda_call_count"));
    return count ? count("cuPointerSetAttribute") : -1;
}

int sync_memops(CUdeviceptr p)
{
    unsigned int value = 7;
    CHECK_CU_OR_EXIT(cuPointerGetAttribute(&value, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p), 1);
    return static_cast<int>(value);
}

// A library's get inside a global capture on another stream of the program.
int get_during_capture(CUdeviceptr p, size_t size)
{
    CUstream stream;
    CHECK_CU_OR_EXIT(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), 1);
    CHECK_CU_OR_EXIT(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), 1);
    const long sets_before = set_calls();
    const ShimRegistrationApi &api = shim_registration_api();
    gdrhook_registration reg;
    const int rc = api.get ? api.get(reinterpret_cast<const void *>(p), size, &reg) : -1;
    if (rc == 0)
        api.put(&reg);
    printf("capture_get=%d\ncapture_sets=%ld\n", rc, set_calls() - sets_before);
    CUgraph graph = nullptr;
    printf("end_capture=%d\n", static_cast<int>(cuStreamEndCapture(stream, &graph)));
    if (graph)
        cuGraphDestroy(graph);
    CHECK_CU_OR_EXIT(cuStreamDestroy(stream), 1);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (!current_primary_context())
        return 1;
    CUdeviceptr buffer;
    const size_t size = 2 << 20;
    CHECK_CU_OR_EXIT(cuMemAlloc(&buffer, size), 1);
    printf("alloc_sync=%d\n", sync_memops(buffer));
    if (argc > 1 && !strcmp(argv[1], "capture") && get_during_capture(buffer, size) != 0)
        return 1;

    std::vector<gdrhook_registration> held;
    const Registered first = hold_with_shim(buffer, size, held);
    const int first_sync = sync_memops(buffer);
    const long first_sets = set_calls();
    const Registered second = hold_with_shim(buffer, size, held);
    const long second_sets = set_calls() - first_sets;
    release_held(held);
    printf("registered=%d\nfirst_sync=%d\nfirst_sets=%ld\nsecond_sets=%ld\n",
           first == Registered::yes && second == Registered::yes, first_sync, first_sets,
           second_sets);
    CHECK_CU_OR_EXIT(cuMemFree(buffer), 1);
    return 0;
}
