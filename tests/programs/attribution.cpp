// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What an event or an invalidation is attributed to, on the paths where
// the attribution can go wrong:
//
//   attribution contexts  allocations on two devices' contexts, switched
//                         with cuCtxSetCurrent and cuCtxPushCurrent on one
//                         thread, and on a second thread that switches the
//                         other way; prints "expect addr=0x... dev=N" for
//                         each allocation
//   attribution vmm       one cuMemUnmap over two adjacent mappings, then
//                         the teardown of their context while a third is
//                         mapped, then the unmap of that third one, which
//                         the shim no longer tracks; prints the sizes
//                         (unmapped_both=, torn_down_bytes=, unmapped_last=)
//   attribution ipc       an allocation exported with cuIpcGetMemHandle and
//                         imported with cuIpcOpenMemHandle, registered with
//                         gdrhook_get(), closed, imported again; prints
//                         reimported_same_address=0|1,
//                         stale_hits=N (a registration of the closed import
//                         served for the new one) and used_after_close=BYTES
//                         (device memory in use when the close returned,
//                         beyond the exporter's allocation)
//
// Exit status 0 when every driver call succeeded.
#include "cuda_checks.h"
#include "library_registration.h"

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <thread>

namespace {

void expect(CUdeviceptr p, int dev)
{
    std::printf("expect addr=0x%llx dev=%d\n", static_cast<unsigned long long>(p), dev);
}

int alloc_expecting(CUdeviceptr &p, int dev)
{
    CHECK_CU(cuMemAlloc(&p, 1 << 20));
    expect(p, dev);
    return 0;
}

// The thread's device changes with its current context: the shim asks
// again after every switch, whatever it remembered for the thread.
int contexts(CUcontext primary)
{
    CUcontext other = nullptr;
    CHECK_CU(cuCtxCreate(&other, nullptr, 0, 1)); // device 1, now current
    CUdeviceptr a = 0, b = 0, c = 0, d = 0;
    if (alloc_expecting(a, 1) || cuCtxSetCurrent(primary) || alloc_expecting(b, 0))
        return 1;
    CHECK_CU(cuCtxPushCurrent(other));
    if (alloc_expecting(c, 1))
        return 1;
    CHECK_CU(cuCtxPopCurrent(nullptr));
    if (alloc_expecting(d, 0))
        return 1;
    int failed_on_thread = 0;
    std::thread([&] {
        CUdeviceptr e = 0, f = 0;
        failed_on_thread = cuCtxSetCurrent(primary) || alloc_expecting(e, 0) ||
                           cuCtxSetCurrent(other) || alloc_expecting(f, 1) || cuMemFree(e) ||
                           cuMemFree(f);
    }).join();
    if (failed_on_thread)
        return failed("the switching thread", CUDA_ERROR_UNKNOWN);
    for (CUdeviceptr p : {a, b, c, d})
        CHECK_CU(cuMemFree(p));
    CHECK_CU(cuCtxDestroy(other));
    return 0;
}

int vmm()
{
    CUcontext ctx = nullptr;
    CHECK_CU(cuCtxCreate(&ctx, nullptr, 0, 0));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granularity = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CHECK_CU(cuMemAddressReserve(&va, 3 * granularity, 0, 0, 0));
    CUmemGenericAllocationHandle handles[3];
    for (int i = 0; i < 3; ++i) {
        CHECK_CU(cuMemCreate(&handles[i], granularity, &prop, 0));
        CHECK_CU(cuMemMap(va + i * granularity, granularity, 0, handles[i], 0));
    }
    CHECK_CU(cuMemUnmap(va, 2 * granularity));
    std::printf("unmapped_both=%zu\n", 2 * granularity);
    CHECK_CU(cuMemRelease(handles[0]));
    CHECK_CU(cuMemRelease(handles[1]));
    // What the teardown ends: the third mapping and its handle.
    std::printf("torn_down_bytes=%zu\n", 2 * granularity);
    CHECK_CU(cuCtxDestroy(ctx));
    CHECK_CU(cuMemUnmap(va + 2 * granularity, granularity));
    std::printf("unmapped_last=%zu\n", granularity);
    CHECK_CU(cuMemRelease(handles[2]));
    CHECK_CU(cuMemAddressFree(va, 3 * granularity));
    return 0;
}

size_t device_memory_in_use()
{
    size_t free_bytes = 0, total = 0;
    cuMemGetInfo(&free_bytes, &total);
    return total - free_bytes;
}

unsigned long long buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
    return id;
}

// Registers the import as a library would before sending from it; a
// registration whose buffer is not the memory there now is stale.
int register_import(CUdeviceptr imported, int &stale_hits)
{
    const ShimRegistrationApi &api = shim_registration_api();
    if (!api.get)
        return 0;
    gdrhook_registration reg;
    if (int rc = api.get(reinterpret_cast<const void *>(imported + 4096), 65536, &reg); rc != 0)
        return failed("gdrhook_get of the import", CUresult(-rc));
    stale_hits += reg.buffer_id != buffer_id(imported);
    api.put(&reg);
    return 0;
}

int ipc()
{
    CUdeviceptr exported = 0;
    CHECK_CU(cuMemAlloc(&exported, 1 << 20));
    CUipcMemHandle handle;
    CHECK_CU(cuIpcGetMemHandle(&handle, exported));
    const size_t in_use_before = device_memory_in_use();
    CUdeviceptr imported = 0;
    CHECK_CU(cuIpcOpenMemHandle_v2(&imported, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    int stale_hits = 0;
    if (register_import(imported, stale_hits))
        return 1;
    CHECK_CU(cuIpcCloseMemHandle(imported));
    std::printf("used_after_close=%zu\n", device_memory_in_use() - in_use_before);
    CUdeviceptr again = 0;
    CHECK_CU(cuIpcOpenMemHandle_v2(&again, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    std::printf("reimported_same_address=%d\n", again == imported);
    if (register_import(again, stale_hits))
        return 1;
    std::printf("stale_hits=%d\n", stale_hits);
    CHECK_CU(cuIpcCloseMemHandle(again));
    CHECK_CU(cuMemFree(exported));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUcontext primary = current_primary_context();
    if (!primary)
        return failed("context setup", CUDA_ERROR_UNKNOWN);
    if (!std::strcmp(mode, "contexts"))
        return contexts(primary);
    if (!std::strcmp(mode, "vmm"))
        return vmm();
    if (!std::strcmp(mode, "ipc"))
        return ipc();
    std::fprintf(stderr, "usage: attribution contexts|vmm|ipc\n");
    return 2;
}
