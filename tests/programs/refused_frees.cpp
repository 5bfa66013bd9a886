// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Frees the driver refuses, between live allocations that pin-on-alloc
// pinned: an address inside an allocation (cuMemFree and cuMemFreeAsync of
// base + 1 MiB, and of the last byte; cuMemFreeHost inside page-locked
// memory, pinned where the device exports host memory; cuMemHostUnregister
// inside a registered range), and an address in no allocation.
// The driver answers each with an error and frees nothing; under the shim
// nothing of the live allocations may be unpinned either
// (tests/shim/test_refused_frees.cpp). Then the real frees.
//
// Prints each refused call's result (`refused NAME rc=N`, the same plain
// and hooked) and frees_made=4 on stdout, mem_used_delta=N on stderr
// (tests/gpu/run.sh's row). On the fake driver and on a GPU. Exit status 0
// when every refusal was one and the real frees succeeded.
#include "cuda_checks.h"

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t size = 4 << 20;

// A call that must fail: prints its result; false when it succeeded.
bool refused(const char *name, CUresult rc)
{
    std::printf("refused %s rc=%d\n", name, static_cast<int>(rc));
    return rc != CUDA_SUCCESS;
}

} // namespace

int main()
{
    if (!current_primary_context())
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    const long long used_before = device_bytes_in_use();
    CUdeviceptr first = 0, second = 0;
    CHECK_CU(cuMemAlloc(&first, size));
    CHECK_CU(cuMemAlloc(&second, size));
    CUstream stream = nullptr;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    void *page_locked = nullptr;
    CHECK_CU(cuMemAllocHost(&page_locked, size));
    char *own = static_cast<char *>(std::aligned_alloc(4096, size));
    if (!own)
        return failed("aligned_alloc", CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemHostRegister(own, size, 0));

    bool all = refused("cuMemFree(first + 1 MiB)", cuMemFree(first + (1 << 20)));
    all &= refused("cuMemFree(second + size - 1)", cuMemFree(second + size - 1));
    all &= refused("cuMemFreeAsync(first + 64 KiB)", cuMemFreeAsync(first + (64 << 10), stream));
    all &= refused("cuMemFreeHost(page_locked + 4 KiB)",
                   cuMemFreeHost(static_cast<char *>(page_locked) + 4096));
    all &= refused("cuMemHostUnregister(own + 4 KiB)", cuMemHostUnregister(own + 4096));
    // Past both: an address the driver knows nothing of.
    const CUdeviceptr beyond = (first > second ? first : second) + (64 << 20);
    all &= refused("cuMemFree(no allocation)", cuMemFree(beyond));
    CHECK_CU(cuStreamSynchronize(stream));
    if (!all)
        return failed("a free the driver should have refused", CUDA_ERROR_UNKNOWN);

    CHECK_CU(cuMemHostUnregister(own));
    std::free(own);
    CHECK_CU(cuMemFreeHost(page_locked));
    CHECK_CU(cuMemFree(second));
    CHECK_CU(cuMemFree(first));
    CHECK_CU(cuStreamDestroy(stream));
    std::printf("frees_made=4\n");
    std::fprintf(stderr, "mem_used_delta=%lld\n", device_bytes_in_use() - used_before);
    return 0;
}
