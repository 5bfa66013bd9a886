// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_pin_limits.cpp - what a long-term pin of host pages costs its
// opener, met as a hostile local user would (issue 39, items 11, 12, 14).
//
// memlock: a user without CAP_IPC_LOCK whose RLIMIT_MEMLOCK is 64 KiB
// pins 64 KiB and no more (ENOMEM, as the RDMA core's umem says), and a
// 1 GiB request is refused before the module sizes anything by it; the
// charge shows in the process's VmPin while the pages are pinned, through
// a munmap revocation, and goes with UNPIN or close().
// opener_uid: the per-user cap is the opener's: a process that opened
// the device and then switched uid pins no further than the opener may.
// shared_file: a writable shared mapping of a file (page cache the file
// system writes back) is never pinned long-term; shared memory (shmem,
// what MAP_SHARED|MAP_ANONYMOUS gives) still is.
// get_pages: physical addresses of host pages are for CAP_SYS_RAWIO only,
// allow_unprivileged_get_pages or not.
#include "unprivileged.hpp"

#include <fstream>
#include <sys/mount.h>
#include <sys/wait.h>

namespace vmtest {
namespace {

constexpr const char *kRamfs = "/mnt/gdrhook-ramfs";

bool check_memlock()
{
    NodeOpenToAll open_to_all;
    const bool ok = in_child([] {
        become_nobody();
        Gdrhook dev(O_RDWR | O_CLOEXEC | O_NONBLOCK);
        CHECK(dev.ok());
        const size_t limit_pages = kMemlockPages;
        char *mem = map_touched_pages(limit_pages + 1);
        uint64_t h = 0, extra = 0;
        CHECK_OK(pin_host(dev, mem, limit_pages * kPage, &h));
        // One page past the limit, then far past it.
        CHECK_ERR(pin_host(dev, mem + limit_pages * kPage, kPage, &extra), ENOMEM);
        void *huge = ::mmap(nullptr, 1ULL << 30, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        CHECK(huge != MAP_FAILED);
        CHECK_ERR(pin_host(dev, huge, 1ULL << 30, &extra), ENOMEM);
        CHECK(vm_pin_kib() == kMemlock / 1024);
        // Revoked by munmap, the pages stay pinned and charged until UNPIN.
        CHECK(::munmap(mem, limit_pages * kPage) == 0);
        std::vector<gdrhook_event> events;
        CHECK_OK(wait_events(dev, 5000, &events));
        CHECK(events.size() == 1 && events[0].handle == h);
        CHECK(vm_pin_kib() == kMemlock / 1024);
        CHECK_OK(dev.unpin(h));
        CHECK(vm_pin_kib() == 0);
        // Uncharged once: the whole limit is there again, and close()
        // gives it back as UNPIN does.
        char *again = map_touched_pages(limit_pages);
        CHECK_OK(pin_host(dev, again, limit_pages * kPage, &h));
        CHECK(vm_pin_kib() == kMemlock / 1024);
        dev.close();
        CHECK(vm_pin_kib() == 0);
        std::printf("pin_limits: memlock %llu KiB: %zu pages pinned, the next refused (ENOMEM)\n",
                    static_cast<unsigned long long>(kMemlock / 1024), limit_pages);
        return 0;
    });
    CHECK(wait_counter("/sys/kernel/debug/gdrhook", "pins_live", 0, 5000));
    return ok;
}

bool check_opener_uid()
{
    constexpr unsigned kCap = 16;
    const std::string old_cap = [] {
        std::ifstream in("/sys/module/gdrhook/parameters/max_pinned_pages_per_user");
        std::string v;
        in >> v;
        return v;
    }();
    set_param("gdrhook", "max_pinned_pages_per_user", std::to_string(kCap));
    const bool ok = in_child([] {
        Gdrhook dev; // opened by root, who is charged for its pins
        CHECK(dev.ok());
        char *mem = map_touched_pages(kCap + 1);
        uint64_t h = 0, extra = 0;
        CHECK_OK(pin_host(dev, mem, kCap * kPage, &h));
        // The same file, the same process, another uid: still root's cap.
        CHECK(::setresuid(kNobody, kNobody, 0) == 0);
        CHECK_ERR(pin_host(dev, mem + kCap * kPage, kPage, &extra), ENOSPC);
        return 0;
    });
    set_param("gdrhook", "max_pinned_pages_per_user", old_cap);
    return ok;
}

bool check_shared_file_refused()
{
    ::mkdir("/mnt", 0755);
    ::mkdir(kRamfs, 0755);
    CHECK(::mount("ramfs", kRamfs, "ramfs", 0, "mode=0777") == 0);
    const std::string path = std::string(kRamfs) + "/shared";
    {
        Fd file(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
        CHECK(file.ok() && ::fchmod(file.get(), 0666) == 0 &&
              ::ftruncate(file.get(), 4 * kPage) == 0);
    }
    NodeOpenToAll open_to_all;
    const bool ok = in_child([&path] {
        become_nobody();
        Gdrhook dev;
        CHECK(dev.ok());
        Fd file(::open(path.c_str(), O_RDWR | O_CLOEXEC));
        CHECK(file.ok());
        void *shared =
            ::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
        CHECK(shared != MAP_FAILED);
        std::memset(shared, 1, 4 * kPage);
        uint64_t h = 0;
        CHECK_ERR(pin_host(dev, shared, 4 * kPage, &h), EOPNOTSUPP);
        CHECK(vm_pin_kib() == 0);
        // Shared memory has no file to write back: it pins.
        void *shmem =
            ::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        CHECK(shmem != MAP_FAILED);
        std::memset(shmem, 1, 4 * kPage);
        CHECK_OK(pin_host(dev, shmem, 4 * kPage, &h));
        CHECK_OK(dev.unpin(h));
        return 0;
    });
    ::umount(kRamfs);
    return ok;
}

bool check_get_pages_needs_rawio()
{
    set_param("gdrhook", "allow_unprivileged_get_pages", "1");
    NodeOpenToAll open_to_all;
    const bool ok = in_child([] {
        become_nobody();
        Gdrhook dev;
        CHECK(dev.ok());
        char *mem = map_touched_pages(4);
        uint64_t h = 0;
        CHECK_OK(pin_host(dev, mem, 4 * kPage, &h));
        std::vector<uint64_t> addrs(4);
        CHECK_ERR(dev.get_pages(h, 0, &addrs), EPERM);
        return 0;
    });
    set_param("gdrhook", "allow_unprivileged_get_pages", "0");
    return ok;
}

} // namespace

int test_pin_limits()
{
    // Each is its own promise: all run, and each says how it ended.
    return run_named_checks("pin_limits", {{"memlock", check_memlock},
                                           {"opener_uid", check_opener_uid},
                                           {"shared_file", check_shared_file_refused},
                                           {"get_pages", check_get_pages_needs_rawio}});
}

} // namespace vmtest
