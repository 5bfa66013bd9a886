// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "driver_api_table.h"

#include <cstdio>
#include <dlfcn.h>

bool fill_by_base_name(DriverApi &api, BaseNameLookup lookup)
{
    bool ok = true;
#define FILL(field, base, symbol, ptsz, version)                                                   \
    api.field = reinterpret_cast<decltype(api.field)>(lookup(#base, version, ptsz));               \
    if (!api.field) {                                                                              \
        fprintf(stderr, "cannot resolve %s\n", #base);                                             \
        ok = false;                                                                                \
    }
    FIELDS(FILL)
#undef FILL
    return ok;
}

bool fill_by_symbol(DriverApi &api, SymbolLookup lookup)
{
    bool ok = true;
#define FILL(field, base, symbol, ptsz, version)                                                   \
    api.field = reinterpret_cast<decltype(api.field)>(lookup(#symbol));                            \
    if (!api.field) {                                                                              \
        fprintf(stderr, "cannot resolve %s\n", #symbol);                                           \
        ok = false;                                                                                \
    }
    FIELDS(FILL)
#undef FILL
    return ok;
}

void fill_by_linked_symbols(DriverApi &api)
{
#define LINKED(field, base, symbol, ptsz, version) api.field = &::symbol;
    FIELDS(LINKED)
#undef LINKED
}

void *libcuda_handle()
{
    static void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return handle;
}

void *libcuda_dlsym(const char *symbol)
{
    return dlsym(libcuda_handle(), symbol);
}

namespace {
decltype(&cuGetProcAddress_v2) proc_address_v2;
}

bool resolve_proc_address_v2()
{
    auto found =
        reinterpret_cast<decltype(&cuGetProcAddress_v2)>(libcuda_dlsym("cuGetProcAddress_v2"));
    if (!found)
        return false;
    void *self = nullptr;
    found("cuGetProcAddress", &self, 13000, 0, nullptr);
    proc_address_v2 = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(self);
    return proc_address_v2 != nullptr;
}

void *proc_lookup_v2(const char *base, int version, bool per_thread)
{
    void *fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    proc_address_v2(base, &fn, version ? version : 13000,
                    per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_DEFAULT,
                    &status);
    return fn;
}

const char *vmm_round_trip(const DriverApi &api, std::map<std::string, long> &made,
                           CUdeviceptr *va_out, CUmemGenericAllocationHandle *handle_out)
{
    const size_t granule = 2 << 20;
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle = 0;
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
#define VMM_STEP(call, name)                                                                       \
    ++made[name];                                                                                  \
    if ((call) != CUDA_SUCCESS)                                                                    \
        return name;
    VMM_STEP(api.address_reserve(&va, granule, 0, 0, 0), "cuMemAddressReserve")
    VMM_STEP(api.mem_create(&handle, granule, &prop, 0), "cuMemCreate")
    VMM_STEP(api.mem_map(va, granule, 0, handle, 0), "cuMemMap")
    VMM_STEP(api.mem_unmap(va, granule), "cuMemUnmap")
    VMM_STEP(api.mem_release(handle), "cuMemRelease")
    VMM_STEP(api.address_free(va, granule), "cuMemAddressFree")
#undef VMM_STEP
    if (va_out)
        *va_out = va;
    if (handle_out)
        *handle_out = handle;
    return nullptr;
}
