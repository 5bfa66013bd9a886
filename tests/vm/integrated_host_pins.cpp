// SPDX-License-Identifier: GPL-2.0-only OR MIT
//
// integrated_host_pins - runs in the VM guest under LD_PRELOAD=libgdrhook.so
// with GDRHOOK_PIN=alloc and GDRHOOK_BACKEND=auto, linked against the fake
// driver in its integrated-GPU mode (FAKECUDA_INTEGRATED=1), where freeing
// host memory gives its pages back to the system. Checks, through
// gdrhook.ko's own counters, that the shim on an integrated GPU pins host
// memory through the module's pin_user_pages backend: cuMemHostAlloc and
// cuMemHostRegister memory is pinned when allocated (one pin each);
// gdrhook_get() by the host address and by the cuMemHostGetDevicePointer
// address finds that one registration (no second pin); cuMemFreeHost and
// cuMemHostUnregister return only once the pin is gone, and the pages
// going back to the system revokes nothing (the pin was released before
// the real free). Exit status 0: all held.
//
// With INTEGRATED_MEMLOCK_64K=1 the program first drops CAP_IPC_LOCK and
// sets its RLIMIT_MEMLOCK to 64 KiB, as an ordinary user's process runs:
// the module refuses to pin its 1 MiB (issue 39, item 11), and the program
// must not notice: the allocation, the free and the exit are as without
// the shim, nothing is pinned, gdrhook_get finds nothing, and the shim's
// log says why (the guest step reads it).
#include <cuda.h>

#include "include/gdrhook.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <linux/capability.h>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "integrated_host_pins: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

namespace {

uint64_t module_counter(const char *name)
{
    const std::string path = std::string("/sys/kernel/debug/gdrhook/") + name;
    FILE *f = fopen(path.c_str(), "r");
    EXPECT(f != nullptr);
    unsigned long long value = 0;
    EXPECT(fscanf(f, "%llu", &value) == 1);
    fclose(f);
    return value;
}

using GetFn = int (*)(const void *, size_t, gdrhook_registration *);
using PutFn = int (*)(gdrhook_registration *);

constexpr size_t kSize = 1 << 20;

// An ordinary user's limits, before the shim opens /dev/gdrhook (the
// module judges CAP_IPC_LOCK by the opener's credentials).
void drop_to_memlock_64k()
{
    const rlimit limit{64 * 1024, 64 * 1024};
    EXPECT(setrlimit(RLIMIT_MEMLOCK, &limit) == 0);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    EXPECT(syscall(SYS_capget, &header, data) == 0);
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    EXPECT(syscall(SYS_capset, &header, data) == 0);
}

// The module refuses the pin; the program goes on as without the shim.
int memlock_refused(GetFn get)
{
    const uint64_t live0 = module_counter("pins_live");
    void *host = nullptr;
    EXPECT(cuMemHostAlloc(&host, kSize, 0) == CUDA_SUCCESS);
    memset(host, 0x5a, kSize);
    EXPECT(module_counter("pins_live") == live0);
    gdrhook_registration reg{};
    EXPECT(get(host, 4096, &reg) != 0);
    EXPECT(cuMemFreeHost(host) == CUDA_SUCCESS);
    EXPECT(module_counter("pins_live") == live0);
    printf("integrated_host_pins: past RLIMIT_MEMLOCK nothing pinned, the program unaffected\n");
    return 0;
}

} // namespace

int main()
{
    const char *memlock = getenv("INTEGRATED_MEMLOCK_64K");
    const bool limited = memlock && strcmp(memlock, "1") == 0;
    if (limited)
        drop_to_memlock_64k();
    EXPECT(cuInit(0) == CUDA_SUCCESS);
    CUdevice device;
    CUcontext context;
    EXPECT(cuDeviceGet(&device, 0) == CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&context, device) == CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(context) == CUDA_SUCCESS);
    int integrated = 0;
    EXPECT(cuDeviceGetAttribute(&integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED, device) ==
           CUDA_SUCCESS);
    EXPECT(integrated == 1);
    auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    auto put = reinterpret_cast<PutFn>(dlsym(RTLD_DEFAULT, "gdrhook_put"));
    EXPECT(get && put); // the shim is preloaded
    if (limited)
        return memlock_refused(get);

    const uint64_t live0 = module_counter("pins_live");
    const uint64_t revoked0 = module_counter("revocations");

    // cuMemHostAlloc memory: pinned as it is allocated.
    void *host = nullptr;
    EXPECT(cuMemHostAlloc(&host, kSize, 0) == CUDA_SUCCESS);
    EXPECT(module_counter("pins_live") == live0 + 1);
    gdrhook_registration by_host{}, by_device{};
    EXPECT(get(host, 4096, &by_host) == 0);
    EXPECT(by_host.kind == GDRHOOK_REG_KMOD && by_host.kmod_handle != 0);
    EXPECT(by_host.base == reinterpret_cast<uintptr_t>(host) && by_host.length == kSize);

    // Its device address: another address, the same registration.
    CUdeviceptr dptr = 0;
    EXPECT(cuMemHostGetDevicePointer(&dptr, host, 0) == CUDA_SUCCESS);
    EXPECT(dptr != reinterpret_cast<uintptr_t>(host));
    EXPECT(get(reinterpret_cast<void *>(dptr + 8192), 4096, &by_device) == 0);
    EXPECT(by_device.kmod_handle == by_host.kmod_handle);
    EXPECT(by_device.base == dptr && by_device.length == kSize);
    EXPECT(module_counter("pins_live") == live0 + 1);
    EXPECT(put(&by_host) == 0 && put(&by_device) == 0);

    // Unpinned before the free returns; the pages going back revoke nothing.
    EXPECT(cuMemFreeHost(host) == CUDA_SUCCESS);
    EXPECT(module_counter("pins_live") == live0);
    EXPECT(module_counter("revocations") == revoked0);

    // The program's own memory, registered.
    void *mine = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(mine != MAP_FAILED);
    memset(mine, 0x5a, kSize);
    EXPECT(cuMemHostRegister(mine, kSize, 0) == CUDA_SUCCESS);
    EXPECT(module_counter("pins_live") == live0 + 1);
    EXPECT(cuMemHostUnregister(mine) == CUDA_SUCCESS);
    EXPECT(module_counter("pins_live") == live0);
    EXPECT(munmap(mine, kSize) == 0);
    EXPECT(module_counter("revocations") == revoked0);

    EXPECT(cuDevicePrimaryCtxRelease(device) == CUDA_SUCCESS);
    printf("integrated_host_pins: host memory pinned at allocation, found by both addresses, "
           "unpinned before its free returned\n");
    return 0;
}
