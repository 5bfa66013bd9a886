// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// cuCtxDestroy with pins outstanding, a driver-API program linked with
// -lcuda (built by tests/gpu/build_programs.sh). It creates a context,
// allocates buffers in it (which the shim pins under GDRHOOK_PIN=alloc) and
// destroys the context without freeing them. Under the shim the log must
// hold one ctx_destroy event that released every byte, and an unpin for
// every pin made because of that teardown (reason "invalidated", not the
// exit's "teardown"); the memory must come back.
//
// It makes no free of its own ("frees_made=0"); the expectations go to
// stderr for tests/gpu/run.sh. The primary context, held throughout, only
// measures device memory before and after; it is never released, so the
// one ctx_destroy event is the created context's.
//
// Uses only what the fake driver (tests/fake_driver) implements, so it also
// runs against it.
#include "driver_program.h"

int main()
{
    const int buffers = 8;
    const size_t size = 4 << 20;

    const CUdevice device = use_primary_context();
    CUcontext primary;
    CHECK(cuCtxGetCurrent(&primary));
    const long long used_at_start = device_bytes_in_use();

    CUcontext context;
    CHECK(cuCtxCreate(&context, nullptr, 0, device));
    CUdeviceptr p[buffers];
    for (CUdeviceptr &q : p)
        CHECK(cuMemAlloc(&q, size));
    CHECK(cuCtxDestroy(context)); // frees all of them, pinned or not

    CHECK(cuCtxSetCurrent(primary));

    printf("buffers=%d size=%zu\n", buffers, size);
    printf("frees_made=0\n");
    report_used_delta(used_at_start, [] { return device_bytes_in_use(); });
    fprintf(stderr, "expect ctx_destroy=1\n");
    fprintf(stderr, "expect ctx_destroy_bytes=%zu\n", buffers * size);
    // Every pin (there are none without GDRHOOK_PIN=alloc) is released by
    // the teardown's invalidation, not left for the exit.
    fprintf(stderr, "expect_same unpins_invalidated pins\n");
    return 0;
}
