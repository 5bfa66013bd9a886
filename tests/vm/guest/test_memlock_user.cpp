// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_memlock_user.cpp - host-pages pins spend their opener's user's
// locked memory (RLIMIT_MEMLOCK), met as a hostile local user would.
//
// fd_passing: pins live as long as their file, and a file outlives its
// opener when its fd is passed on: 32 children of nobody, each at a
// 64 KiB limit, each pin 64 KiB and hand their file to one holder (as
// SCM_RIGHTS would, by pidfd_getfd), one after the other. The first
// pins; every later one is refused (ENOMEM), its opener long gone or
// not; the holder's close() gives the charge back, and a new opener pins
// 64 KiB again.
// cap_refused: a host PIN that the per-user cap refuses (ENOSPC) gives
// its memlock charge back exactly once: the user's locked memory is then
// what its live pins hold, no more and no less, as PIN's own answers
// show (ENOMEM: past the limit, ENOSPC: within it, refused by the cap).
// ipc_lock: an opener with CAP_IPC_LOCK neither charges nor uncharges:
// VmPin stays put through its pin and unpin, and its user's limit is the
// same after as before.
#include "unprivileged.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

namespace vmtest {
namespace {

constexpr int kChildren = 32;

// What one opener handed on: the errno its PIN got, and its file.
struct Passed {
    int pin_errno = -1;
    Fd file;
};

// A child that opens the device, pins its whole limit and hands the file
// to the holder (this process), which takes it with pidfd_getfd (5.6): the
// file as SCM_RIGHTS would pass it, on the debug kernel too, which has no
// unix sockets. The child has exited when this returns.
Passed pin_and_pass_on()
{
    int report[2], done[2];
    CHECK(::pipe2(report, O_CLOEXEC) == 0 && ::pipe2(done, O_CLOEXEC) == 0);
    const Fd report_in(report[0]), report_out(report[1]), done_in(done[0]), done_out(done[1]);
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        Gdrhook dev;
        CHECK(dev.ok());
        uint64_t h = 0;
        const int msg[2] = {pin_host(dev, map_touched_pages(kMemlockPages), kMemlock, &h),
                            dev.fd()};
        CHECK(::write(report_out.get(), msg, sizeof msg) == sizeof msg);
        char c = 0;
        CHECK(::read(done_in.get(), &c, 1) == 1); // the holder has the file
        std::_Exit(0);
    }
    int msg[2] = {-1, -1};
    CHECK(::read(report_in.get(), msg, sizeof msg) == sizeof msg);
    const Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    CHECK(pidfd.ok());
    Passed p;
    p.pin_errno = msg[0];
    p.file = Fd(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), msg[1], 0)));
    CHECK(p.file.ok());
    CHECK(::write(done_out.get(), "x", 1) == 1);
    CHECK(exited_ok(pid));
    return p;
}

bool check_fd_passing()
{
    NodeOpenToAll open_to_all;
    return in_child([] {
        become_nobody();
        // pidfd_getfd needs the children traceable by their parent, which
        // a process that changed uid is not until it says so.
        CHECK(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
        std::vector<Fd> held;
        int pinned = 0;
        for (int i = 0; i < kChildren; ++i) {
            Passed p = pin_and_pass_on();
            CHECK(p.pin_errno == 0 || p.pin_errno == ENOMEM);
            if (i == 0)
                CHECK_OK(p.pin_errno);
            pinned += p.pin_errno == 0;
            held.push_back(std::move(p.file));
        }
        std::printf("memlock_user: %d openers of one user at %llu KiB, one holder: %d pinned, %d "
                    "refused\n",
                    kChildren, static_cast<unsigned long long>(kMemlock / 1024), pinned,
                    kChildren - pinned);
        CHECK(pinned == 1);
        // The holder's close() gives the charge back, whoever opened the
        // files: the next opener has its whole limit again.
        held.clear();
        CHECK_OK(pin_and_pass_on().pin_errno);
        return 0;
    });
}

// Sets this process's RLIMIT_MEMLOCK to pages, its hard limit untouched.
void memlock_limit_pages(size_t pages)
{
    rlimit r{};
    CHECK(::getrlimit(RLIMIT_MEMLOCK, &r) == 0);
    r.rlim_cur = pages * kPage;
    CHECK(::setrlimit(RLIMIT_MEMLOCK, &r) == 0);
}

// With the cap full, what the user's locked memory holds, seen through
// PIN's answers: a pin of `probe` pages is refused ENOMEM at a limit of
// held + probe - 1 pages and, within the limit, ENOSPC by the cap at
// held + probe.
void check_locked_pages(const Gdrhook &dev, char *mem, size_t probe, size_t held)
{
    uint64_t h = 0;
    memlock_limit_pages(held + probe - 1);
    CHECK_ERR(pin_host(dev, mem, probe * kPage, &h), ENOMEM);
    memlock_limit_pages(held + probe);
    CHECK_ERR(pin_host(dev, mem, probe * kPage, &h), ENOSPC);
    memlock_limit_pages(kMemlockPages);
}

bool check_cap_refused()
{
    constexpr unsigned kCap = 8;
    static_assert(kCap < kMemlockPages);
    const std::string old_cap = [] {
        std::ifstream in("/sys/module/gdrhook/parameters/max_pinned_pages_per_user");
        std::string v;
        in >> v;
        return v;
    }();
    set_param("gdrhook", "max_pinned_pages_per_user", std::to_string(kCap));
    NodeOpenToAll open_to_all;
    const bool ok = in_child([] {
        become_nobody();
        Gdrhook dev;
        CHECK(dev.ok());
        char *mem = map_touched_pages(kMemlockPages);
        uint64_t h = 0, refused = 0;
        CHECK_OK(pin_host(dev, mem, kCap * kPage, &h));
        // Within the memlock limit, over the cap: charged, then given back.
        CHECK_ERR(pin_host(dev, mem + kCap * kPage, 4 * kPage, &refused), ENOSPC);
        CHECK(vm_pin_kib() == kCap * kPage / 1024);
        check_locked_pages(dev, mem + kCap * kPage, 1, kCap);
        check_locked_pages(dev, mem + kCap * kPage, 4, kCap);
        CHECK_OK(dev.unpin(h));
        CHECK(vm_pin_kib() == 0);
        // Nothing held: a pin over the cap shows the user's count at 0.
        check_locked_pages(dev, mem, kCap + 1, 0);
        std::printf("memlock_user: PINs the cap refused gave their memlock charge back once\n");
        return 0;
    });
    set_param("gdrhook", "max_pinned_pages_per_user", old_cap);
    return ok;
}

// This process's capabilities: CAP_IPC_LOCK alone, or none.
void keep_only_ipc_lock(bool keep)
{
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    if (keep)
        d[CAP_IPC_LOCK / 32].permitted = d[CAP_IPC_LOCK / 32].effective = 1u << (CAP_IPC_LOCK % 32);
    CHECK(::syscall(SYS_capset, &h, d) == 0);
}

bool check_ipc_lock()
{
    NodeOpenToAll open_to_all;
    return in_child([] {
        // nobody, its 64 KiB limit, and CAP_IPC_LOCK kept across the switch.
        CHECK(::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0);
        become_nobody();
        keep_only_ipc_lock(true);
        const size_t pages = 2 * kMemlockPages;
        char *mem = map_touched_pages(pages + 1);
        {
            Gdrhook exempt;
            CHECK(exempt.ok());
            uint64_t h = 0;
            CHECK(vm_pin_kib() == 0);
            CHECK_OK(pin_host(exempt, mem, pages * kPage, &h));
            CHECK(vm_pin_kib() == 0);
            CHECK_OK(exempt.unpin(h));
            CHECK(vm_pin_kib() == 0);
            CHECK_OK(pin_host(exempt, mem, pages * kPage, &h));
        } // closed with its pin
        CHECK(vm_pin_kib() == 0);
        // Without the capability the user's limit is whole, not more.
        keep_only_ipc_lock(false);
        Gdrhook charged;
        CHECK(charged.ok());
        uint64_t h = 0, extra = 0;
        CHECK_OK(pin_host(charged, mem, kMemlock, &h));
        CHECK(vm_pin_kib() == kMemlock / 1024);
        CHECK_ERR(pin_host(charged, mem + kMemlock, kPage, &extra), ENOMEM);
        return 0;
    });
}

} // namespace

int test_memlock_user()
{
    return run_named_checks("memlock_user", {{"fd_passing", check_fd_passing},
                                             {"cap_refused", check_cap_refused},
                                             {"ipc_lock", check_ipc_lock}});
}

} // namespace vmtest
