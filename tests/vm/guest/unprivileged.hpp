// SPDX-License-Identifier: GPL-2.0-only OR MIT
// unprivileged.hpp - a local user without privileges, as the memlock
// steps meet one: nobody with a 64 KiB RLIMIT_MEMLOCK, the device node
// opened to it, its process's VmPin, its host-pages pins.
#pragma once

#include "common.hpp"

#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>

namespace vmtest {

constexpr size_t kPage = 4096;
constexpr rlim_t kMemlock = 64 * 1024;
constexpr size_t kMemlockPages = kMemlock / kPage;
constexpr uid_t kNobody = 65534;

// The process's pinned memory as the kernel shows it (mm->pinned_vm).
inline uint64_t vm_pin_kib()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmPin:", 0) == 0)
            return std::stoull(line.substr(6));
    fail(__FILE__, __LINE__, "no VmPin in /proc/self/status");
}

// Becomes nobody with a 64 KiB memlock limit (a child only).
inline void become_nobody()
{
    const rlimit r{kMemlock, kMemlock};
    CHECK(::setrlimit(RLIMIT_MEMLOCK, &r) == 0);
    CHECK(::setresgid(kNobody, kNobody, kNobody) == 0);
    CHECK(::setresuid(kNobody, kNobody, kNobody) == 0);
}

// Pins len bytes of this process's memory at addr: 0 or the errno.
inline int pin_host(const Gdrhook &dev, const void *addr, size_t len, uint64_t *handle)
{
    gdrhook_ioc_pin p = Gdrhook::host_req(addr, len);
    const int e = dev.pin(&p);
    if (!e)
        *handle = p.handle;
    return e;
}

// Opened by nobody as any user opens it: the module makes the node 0666
// (kmod/README.md, "Access model"), which this checks, never changes.
class NodeOpenToAll {
public:
    NodeOpenToAll()
    {
        struct stat st {};
        CHECK(::stat(GDRHOOK_DEVICE_PATH, &st) == 0 && (st.st_mode & 0777) == 0666);
    }
    NodeOpenToAll(const NodeOpenToAll &) = delete;
    NodeOpenToAll &operator=(const NodeOpenToAll &) = delete;
};

} // namespace vmtest
