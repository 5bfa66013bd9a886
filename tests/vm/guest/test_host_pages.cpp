// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_host_pages.cpp - the pin_user_pages backend (kmod/host_pages.c),
// with anonymous memory standing in for cuMemHostAlloc memory: pin and
// unpin (the pages' long-term pins come and go, GET_PAGES answers their
// physical pages, or their DMA addresses for a peer); munmap and
// madvise(MADV_DONTNEED) revoke the pin (one event, QUERY says REVOKED)
// while its pages stay pinned until UNPIN; mprotect does not revoke; a
// pin of memory only read so far (the zero page) does not revoke itself;
// a process that exits with pins has them all released.
#include "common.hpp"

#include <sys/wait.h>

namespace vmtest {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kPages = 32;

// Long-term pins (FOLL_PIN) held now, all over the guest: the kernel's own
// count of pin_user_pages() minus unpin_user_page*(). The counters are
// kept per CPU and folded now and then: vm.stat_refresh folds them first,
// so the answer is exact.
int64_t foll_pins_held()
{
    FILE *refresh = std::fopen("/proc/sys/vm/stat_refresh", "w");
    CHECK(refresh != nullptr);
    CHECK(std::fputs("1", refresh) >= 0 && std::fclose(refresh) == 0);
    uint64_t acquired = 0;
    uint64_t released = 0;
    FILE *f = std::fopen("/proc/vmstat", "r");
    CHECK(f != nullptr);
    char name[64];
    unsigned long long value;
    while (std::fscanf(f, "%63s %llu", name, &value) == 2) {
        if (std::strcmp(name, "nr_foll_pin_acquired") == 0)
            acquired = value;
        else if (std::strcmp(name, "nr_foll_pin_released") == 0)
            released = value;
    }
    std::fclose(f);
    return static_cast<int64_t>(acquired - released);
}

uint64_t pin_host(const Gdrhook &dev, const void *addr, size_t len, uint64_t tag, bool peer = false)
{
    gdrhook_ioc_pin p = Gdrhook::host_req(addr, len, 0, tag);
    if (peer)
        name_first_pci_device_as_peer(&p);
    CHECK_OK(dev.pin(&p));
    CHECK(p.handle != 0);
    CHECK(p.page_size == kPage);
    CHECK(p.page_count == len / kPage);
    return p.handle;
}

void check_state(const Gdrhook &dev, uint64_t handle, uint32_t state)
{
    gdrhook_ioc_query q;
    CHECK_OK(dev.query(handle, &q));
    CHECK(q.backend == GDRHOOK_BACKEND_HOST_PAGES);
    CHECK(q.state == state);
}

// Pin, check the pages, unpin: the pins come and go with the handle.
void check_pin_unpin(const Gdrhook &dev, bool peer)
{
    const int64_t before = foll_pins_held();
    char *mem = map_touched_pages(kPages);
    const uint64_t h = pin_host(dev, mem, kPages * kPage, 7, peer);
    CHECK(foll_pins_held() - before == static_cast<int64_t>(kPages));
    check_state(dev, h, GDRHOOK_STATE_VALID);
    // No IOMMU in the guest: the peer's DMA addresses are physical ones.
    std::vector<uint64_t> addrs(kPages);
    CHECK_OK(dev.get_pages(h, 0, &addrs));
    CHECK(addrs.size() == kPages);
    for (size_t i = 0; i < kPages; i++)
        CHECK(addrs[i] == phys_addr(mem + i * kPage));
    CHECK_OK(dev.unpin(h));
    CHECK(foll_pins_held() == before);
    CHECK(::munmap(mem, kPages * kPage) == 0);
    std::vector<gdrhook_event> events;
    CHECK_OK(dev.read_events(&events));
    CHECK(events.empty()); // an unpinned range's munmap revokes nothing
}

// The memory goes away under a live pin: one event, the pin REVOKED, its
// pages still pinned (the peer may still DMA to them) until UNPIN.
void check_gone(const Gdrhook &dev, const char *how, int (*make_gone)(char *, size_t))
{
    std::printf("host_pages: %s revokes\n", how);
    const int64_t before = foll_pins_held();
    const uint64_t revocations = gdr_counter("revocations");
    char *mem = map_touched_pages(kPages);
    const uint64_t h = pin_host(dev, mem, kPages * kPage, 0x4242);
    CHECK(make_gone(mem, kPages * kPage) == 0);
    std::vector<gdrhook_event> events;
    CHECK_OK(wait_events(dev, 5000, &events));
    CHECK(events.size() == 1);
    CHECK(events[0].type == GDRHOOK_EVENT_REVOKED_HOST);
    CHECK(events[0].handle == h && events[0].user_tag == 0x4242);
    CHECK(events[0].addr == reinterpret_cast<uintptr_t>(mem) && events[0].length == kPages * kPage);
    CHECK(gdr_counter("revocations") == revocations + 1);
    check_state(dev, h, GDRHOOK_STATE_REVOKED);
    std::vector<uint64_t> addrs(kPages);
    CHECK_ERR(dev.get_pages(h, 0, &addrs), ENODEV);
    CHECK(foll_pins_held() - before == static_cast<int64_t>(kPages));
    CHECK_OK(dev.unpin(h));
    CHECK(foll_pins_held() == before);
    ::munmap(mem, kPages * kPage); // what is left of it (after MADV_DONTNEED: all)
    CHECK_OK(dev.read_events(&events));
    CHECK(events.empty());
}

// The debug kernel's minimal config has no madvise (CONFIG_ADVISE_SYSCALLS).
bool madvise_available()
{
    void *p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    const bool available = ::madvise(p, kPage, MADV_DONTNEED) == 0 || errno != ENOSYS;
    ::munmap(p, kPage);
    return available;
}

// Invalidations that leave the pages where they are do not revoke.
void check_protection_change_keeps(const Gdrhook &dev)
{
    char *mem = map_touched_pages(kPages);
    const uint64_t h = pin_host(dev, mem, kPages * kPage, 1);
    CHECK(::mprotect(mem, kPages * kPage, PROT_READ) == 0);
    CHECK(::mprotect(mem, kPages * kPage, PROT_READ | PROT_WRITE) == 0);
    check_state(dev, h, GDRHOOK_STATE_VALID);
    CHECK_OK(dev.unpin(h));
    CHECK(::munmap(mem, kPages * kPage) == 0);
}

// Memory only read so far maps the zero page: pinning it for writing
// breaks copy-on-write, an invalidation of the range, which must not
// revoke the pin being made.
void check_zero_page_pins(const Gdrhook &dev)
{
    void *p =
        ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    volatile char sum = 0;
    for (size_t i = 0; i < kPages; i++)
        sum = sum + static_cast<volatile char *>(p)[i * kPage];
    const uint64_t h = pin_host(dev, p, kPages * kPage, 2);
    check_state(dev, h, GDRHOOK_STATE_VALID);
    std::vector<gdrhook_event> events;
    CHECK_OK(dev.read_events(&events));
    CHECK(events.empty());
    CHECK_OK(dev.unpin(h));
    CHECK(::munmap(p, kPages * kPage) == 0);
}

// A process that ends holding pins: its address space ends (the notifier
// revokes) and its file closes (every pin released).
void check_exit_releases()
{
    const int64_t before = foll_pins_held();
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        Gdrhook dev(O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (!dev.ok())
            std::_Exit(2);
        char *mem = map_touched_pages(kPages);
        for (int i = 0; i < 4; i++)
            pin_host(dev, mem + i * 8 * kPage, 8 * kPage, i);
        std::_Exit(foll_pins_held() - before == static_cast<int64_t>(kPages) ? 0 : 3);
    }
    int st = 0;
    CHECK(::waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(wait_counter("/sys/kernel/debug/gdrhook", "pins_live", 0, 5000));
    CHECK(foll_pins_held() == before);
}

} // namespace

int test_host_pages()
{
    Gdrhook dev(O_RDWR | O_CLOEXEC | O_NONBLOCK);
    CHECK(dev.ok());
    gdrhook_ioc_version v{};
    CHECK_OK(dev.version(&v));
    CHECK(v.features & GDRHOOK_FEATURE_HOST_PAGES);

    check_pin_unpin(dev, false);
    check_pin_unpin(dev, true);
    check_gone(dev, "munmap", [](char *p, size_t n) { return ::munmap(p, n); });
    if (madvise_available())
        check_gone(dev, "madvise(MADV_DONTNEED)",
                   [](char *p, size_t n) { return ::madvise(p, n, MADV_DONTNEED); });
    else
        std::printf("host_pages: no madvise in this kernel (CONFIG_ADVISE_SYSCALLS=n): "
                    "the zap is shown on the others\n");
    check_protection_change_keeps(dev);
    check_zero_page_pins(dev);
    check_exit_releases();
    dev.close();
    check_no_leaks("after host_pages");
    return 0;
}

} // namespace vmtest
