// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/host_aliases.h"

#include "cache/core/runtime.h"

#include <atomic>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace gdrhook {
namespace {

struct HostRange {
    uint64_t host_base = 0;
    uint64_t size = 0;
};

// Device range start -> the host range it shows. Written when a program
// asks for a device pointer and at frees, read by gdrhook_get().
struct Aliases {
    std::shared_mutex lock;
    std::map<uint64_t, HostRange> by_device;
    // Relaxed: a lookup racing the first note may miss it, as it would had
    // it come first; the program orders its own calls.
    std::atomic<size_t> count{0};
};

Aliases &aliases()
{
    static auto *a = new Aliases(); // frees may reach it during exit
    return *a;
}

// The host allocation containing addr, as the tracker or the driver knows it.
bool host_allocation_of(uint64_t addr, HostRange &out)
{
    Runtime &rt = runtime();
    if (auto found = rt.tracker.find(MemoryKind::device, addr)) {
        out = HostRange{found->addr, found->size};
        return true;
    }
    uint64_t base = 0, size = 0;
    if (!rt.queries.address_range || !rt.queries.address_range(addr, &base, &size))
        return false;
    out = HostRange{base, size};
    return true;
}

} // namespace

void note_device_alias(uint64_t device_addr, uint64_t host_addr)
{
    HostRange range;
    if (device_addr == host_addr || !host_allocation_of(host_addr, range))
        return;
    const uint64_t device_base = device_addr - (host_addr - range.host_base);
    Aliases &a = aliases();
    std::unique_lock<std::shared_mutex> lock(a.lock);
    a.by_device[device_base] = range;
    a.count.store(a.by_device.size(), std::memory_order_relaxed);
}

void forget_device_aliases(uint64_t host_addr)
{
    Aliases &a = aliases();
    if (a.count.load(std::memory_order_relaxed) == 0)
        return;
    std::unique_lock<std::shared_mutex> lock(a.lock);
    for (auto it = a.by_device.begin(); it != a.by_device.end();) {
        if (it->second.host_base == host_addr)
            it = a.by_device.erase(it);
        else
            ++it;
    }
    a.count.store(a.by_device.size(), std::memory_order_relaxed);
}

bool host_address_of(uint64_t addr, uint64_t &host_addr)
{
    Aliases &a = aliases();
    if (a.count.load(std::memory_order_relaxed) == 0)
        return false;
    std::shared_lock<std::shared_mutex> lock(a.lock);
    auto it = a.by_device.upper_bound(addr);
    if (it == a.by_device.begin())
        return false;
    --it;
    if (addr - it->first >= it->second.size)
        return false;
    host_addr = it->second.host_base + (addr - it->first);
    return true;
}

} // namespace gdrhook
