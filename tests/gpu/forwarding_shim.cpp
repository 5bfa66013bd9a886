// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The least any LD_PRELOAD interposer adds to a cuMemAlloc+cuMemFree pair:
// two wrappers that only call the next definition, found once. Run under
// tests/gpu/compare_shims.sh beside libgdrhook.so (and beside it with
// GDRHOOK_DISABLE=1), it says how much of the shim's added time a wrapper
// costs before the shim does anything: the floor of the pair's goal.
//
// g++ -O2 -shared -fPIC -I/usr/local/cuda/include forwarding_shim.cpp -ldl
#include <cuda.h>
#include <dlfcn.h>

namespace {

using AllocFn = CUresult (*)(CUdeviceptr *, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);

AllocFn next_alloc;
FreeFn next_free;

// libcuda is loaded (the program links it) before any initializer runs.
__attribute__((constructor)) void find_next()
{
    next_alloc = reinterpret_cast<AllocFn>(dlsym(RTLD_NEXT, "cuMemAlloc_v2"));
    next_free = reinterpret_cast<FreeFn>(dlsym(RTLD_NEXT, "cuMemFree_v2"));
}

} // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *dptr,
                                                                         size_t bytes)
{
    return next_alloc ? next_alloc(dptr, bytes) : CUDA_ERROR_NOT_INITIALIZED;
}

extern "C" __attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return next_free ? next_free(dptr) : CUDA_ERROR_NOT_INITIALIZED;
}
