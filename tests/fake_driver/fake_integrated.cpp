// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The fake driver's integrated-GPU mode (FAKECUDA_INTEGRATED=1), standing
// in for a Jetson Orin or Thor: CU_DEVICE_ATTRIBUTE_INTEGRATED is 1, and
// host allocations are the device's memory. cuMemHostGetDevicePointer
// answers, for any byte of a host allocation or a registered range, an
// address of its own (a reserved range the size of the allocation, which
// cuMemGetAddressRange resolves) so that tests see a device address that
// differs from the host one; outside this mode it answers the host address
// (unified addressing). Freeing host memory gives its pages back to the
// system as a driver does (the range is mapped afresh), so a pin of the old
// pages that outlived the free is revoked by gdrhook.ko's notifier.
#include "fake_state.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace fake {

bool env_is_one(const char *name)
{
    const char *value = getenv(name);
    return value && !strcmp(value, "1");
}

bool integrated()
{
    static const bool on = env_is_one("FAKECUDA_INTEGRATED");
    return on;
}

namespace {

// The host range [base, base + size) containing p: a live host allocation
// or a registered range. Mutex held.
bool host_range_of(uintptr_t p, uintptr_t &base, size_t &size)
{
    Driver &d = driver();
    auto it = d.live.upper_bound(p);
    if (it != d.live.begin() && std::prev(it)->second.host &&
        p < std::prev(it)->first + std::prev(it)->second.size) {
        base = std::prev(it)->first;
        size = std::prev(it)->second.size;
        return true;
    }
    auto r = d.registered.upper_bound(p);
    if (r != d.registered.begin() && p < std::prev(r)->first + std::prev(r)->second) {
        base = std::prev(r)->first;
        size = std::prev(r)->second;
        return true;
    }
    return false;
}

// The device range of the host range at base, made on first use.
uintptr_t device_range_of(uintptr_t base, size_t size)
{
    Driver &d = driver();
    for (const auto &[device, alias] : d.host_aliases)
        if (alias.host_base == base)
            return device;
    void *range =
        mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED)
        return 0;
    const auto device = reinterpret_cast<uintptr_t>(range);
    d.host_aliases[device] = HostAlias{base, size};
    return device;
}

template <typename Out>
CUresult device_pointer(const char *name, Out *pdptr, void *p, unsigned int flags)
{
    if (CUresult injected = count_call(name))
        return injected;
    if (!pdptr || !p || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    const auto host = reinterpret_cast<uintptr_t>(p);
    uintptr_t base = 0;
    size_t size = 0;
    if (!host_range_of(host, base, size))
        return CUDA_ERROR_INVALID_VALUE;
    if (!integrated()) {
        *pdptr = static_cast<Out>(host);
        return CUDA_SUCCESS;
    }
    const uintptr_t device = device_range_of(base, size);
    if (!device)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pdptr = static_cast<Out>(device + (host - base));
    return CUDA_SUCCESS;
}

} // namespace

bool host_alias_range(uintptr_t addr, uintptr_t &base, size_t &size)
{
    auto &aliases = driver().host_aliases;
    auto it = aliases.upper_bound(addr);
    if (it == aliases.begin() || addr >= std::prev(it)->first + std::prev(it)->second.size)
        return false;
    base = std::prev(it)->first;
    size = std::prev(it)->second.size;
    return true;
}

void host_range_ends(uintptr_t base, size_t size, bool pages_go_back)
{
    auto &aliases = driver().host_aliases;
    for (auto it = aliases.begin(); it != aliases.end();) {
        if (it->second.host_base == base) {
            munmap(reinterpret_cast<void *>(it->first), it->second.size);
            it = aliases.erase(it);
        } else {
            ++it;
        }
    }
    if (integrated() && pages_go_back && size)
        mmap(reinterpret_cast<void *>(base), size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

} // namespace fake

using namespace fake;

extern "C" {

CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int flags)
{
    return device_pointer("cuMemHostGetDevicePointer", pdptr, p, flags);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    return device_pointer("cuMemHostGetDevicePointer_v2", pdptr, p, flags);
}

} // extern "C"
