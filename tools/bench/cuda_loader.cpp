// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cuda_loader.h"

#include <dlfcn.h>

namespace bench {

template <typename F> static F symbol(void *library, const char *name)
{
    return reinterpret_cast<F>(dlsym(library, name));
}

gdrhook::Result<Cuda> Cuda::open()
{
    Cuda cuda;
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library)
        return gdrhook::Result<Cuda>::failure(
            gdrhook::Status::error(gdrhook::StatusCode::no_device, 0, "dlopen"), dlerror());
    cuda.loaded = true;
    auto init = symbol<int (*)(unsigned)>(library, "cuInit");
    auto device_get = symbol<int (*)(int *, int)>(library, "cuDeviceGet");
    auto retain = symbol<int (*)(void **, int)>(library, "cuDevicePrimaryCtxRetain");
    auto set_current = symbol<int (*)(void *)>(library, "cuCtxSetCurrent");
    auto get_name = symbol<int (*)(char *, int, int)>(library, "cuDeviceGetName");
    cuda.mem_alloc = symbol<decltype(cuda.mem_alloc)>(library, "cuMemAlloc_v2");
    cuda.mem_free = symbol<decltype(cuda.mem_free)>(library, "cuMemFree_v2");
    cuda.mem_get_info = symbol<decltype(cuda.mem_get_info)>(library, "cuMemGetInfo_v2");
    cuda.pointer_get_attribute =
        symbol<decltype(cuda.pointer_get_attribute)>(library, "cuPointerGetAttribute");
    cuda.api.pointer_get_attribute = cuda.pointer_get_attribute;
    cuda.api.pointer_set_attribute =
        symbol<decltype(cuda.api.pointer_set_attribute)>(library, "cuPointerSetAttribute");
    cuda.api.mem_get_handle_for_address_range =
        symbol<decltype(cuda.api.mem_get_handle_for_address_range)>(
            library, "cuMemGetHandleForAddressRange");
    cuda.api.device_get_attribute =
        symbol<decltype(cuda.api.device_get_attribute)>(library, "cuDeviceGetAttribute");

    int device = 0;
    void *context = nullptr;
    if (!init || init(0) != 0 || !device_get || device_get(&device, 0) != 0 || !retain ||
        retain(&context, device) != 0 || !set_current || set_current(context) != 0 ||
        !cuda.mem_alloc || !cuda.mem_free)
        return gdrhook::Result<Cuda>::failure(
            gdrhook::Status::error(gdrhook::StatusCode::driver_error, 0, "cuInit"),
            "cuInit or the primary context failed", std::move(cuda));
    char name[256] = "?";
    if (get_name)
        get_name(name, sizeof(name), device);
    cuda.device_name = name;
    cuda.context = true;
    return cuda;
}

} // namespace bench
