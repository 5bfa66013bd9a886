// SPDX-License-Identifier: GPL-2.0-only OR MIT
// common.hpp - what every in-guest test shares: a typed wrapper per device
// (gdrhook, the test provider, the test exporter, vgem), debugfs counters,
// and failure checks.
// Every wrapper method returns 0 or a positive errno; nothing throws.
#pragma once

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrhook_ioctl.h"
#include "gdrhook_te_ioctl.h"
#include "gdrhook_tp_ioctl.h"

namespace vmtest {

[[noreturn]] inline void fail(const char *file, int line, const std::string &what)
{
    std::fprintf(stderr, "CHECK FAILED %s:%d: %s\n", file, line, what.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ::vmtest::fail(__FILE__, __LINE__, #cond);                                             \
    } while (0)

// expr yields 0 or an errno; it must yield exactly `want`.
#define CHECK_ERR(expr, want)                                                                      \
    do {                                                                                           \
        int got_ = (expr);                                                                         \
        if (got_ != (want))                                                                        \
            ::vmtest::fail(__FILE__, __LINE__,                                                     \
                           std::string(#expr) + ": want " + std::strerror(want) + " (" +           \
                               std::to_string(want) + "), got " + std::strerror(got_) + " (" +     \
                               std::to_string(got_) + ")");                                        \
    } while (0)

#define CHECK_OK(expr) CHECK_ERR(expr, 0)

// Owns one fd; closes it once.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    Fd(Fd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Fd &operator=(Fd &&o) noexcept
    {
        if (this != &o) {
            reset();
            fd_ = o.fd_;
            o.fd_ = -1;
        }
        return *this;
    }
    ~Fd() { reset(); }
    void reset()
    {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }
    int get() const { return fd_; }
    bool ok() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

inline int sys_ioctl(int fd, unsigned long cmd, void *arg)
{
    return ::ioctl(fd, cmd, arg) == 0 ? 0 : errno;
}

struct PciAddr {
    uint32_t domain = 0;
    uint16_t bdf = 0;
};

// /dev/gdrhook, one open file.
class Gdrhook {
public:
    explicit Gdrhook(int flags = O_RDWR | O_CLOEXEC) : fd_(::open(GDRHOOK_DEVICE_PATH, flags)) {}
    bool ok() const { return fd_.ok(); }
    int fd() const { return fd_.get(); }
    void close() { fd_.reset(); }

    int call(unsigned long cmd, void *arg) const { return sys_ioctl(fd_.get(), cmd, arg); }

    int version(gdrhook_ioc_version *v) const { return call(GDRHOOK_IOCTL_GET_VERSION, v); }
    int pin(gdrhook_ioc_pin *p) const { return call(GDRHOOK_IOCTL_PIN, p); }

    static gdrhook_ioc_pin nvp2p_req(const void *addr, uint64_t len, uint32_t flags = 0,
                                     uint64_t tag = 0)
    {
        gdrhook_ioc_pin p{};
        p.backend = GDRHOOK_BACKEND_NVP2P;
        p.flags = flags;
        p.addr = reinterpret_cast<uintptr_t>(addr);
        p.length = len;
        p.dmabuf_fd = -1;
        p.user_tag = tag;
        return p;
    }
    // The caller's own pages (pin_user_pages), page aligned.
    static gdrhook_ioc_pin host_req(const void *addr, uint64_t len, uint32_t flags = 0,
                                    uint64_t tag = 0)
    {
        gdrhook_ioc_pin p = nvp2p_req(addr, len, flags, tag);
        p.backend = GDRHOOK_BACKEND_HOST_PAGES;
        return p;
    }
    static gdrhook_ioc_pin dmabuf_req(int dmabuf_fd, uint64_t off, uint64_t len, PciAddr peer,
                                      uint64_t tag = 0)
    {
        gdrhook_ioc_pin p{};
        p.backend = GDRHOOK_BACKEND_DMABUF;
        p.flags = GDRHOOK_PIN_PEER;
        p.addr = off;
        p.length = len;
        p.dmabuf_fd = dmabuf_fd;
        p.peer_domain = peer.domain;
        p.peer_bdf = peer.bdf;
        p.user_tag = tag;
        return p;
    }
    int pin_nvp2p(const void *addr, uint64_t len, uint64_t *handle, uint32_t flags = 0,
                  uint64_t tag = 0) const
    {
        gdrhook_ioc_pin p = nvp2p_req(addr, len, flags, tag);
        int e = pin(&p);
        if (!e)
            *handle = p.handle;
        return e;
    }
    int pin_dmabuf(int dmabuf_fd, uint64_t off, uint64_t len, PciAddr peer, uint64_t *handle,
                   uint64_t tag = 0) const
    {
        gdrhook_ioc_pin p = dmabuf_req(dmabuf_fd, off, len, peer, tag);
        int e = pin(&p);
        if (!e)
            *handle = p.handle;
        return e;
    }
    int unpin(uint64_t handle) const
    {
        gdrhook_ioc_unpin u{handle};
        return call(GDRHOOK_IOCTL_UNPIN, &u);
    }
    int unpin_batch(const uint64_t *handles, uint32_t count,
                    gdrhook_ioc_unpin_batch *out = nullptr) const
    {
        gdrhook_ioc_unpin_batch b{};
        b.handles = reinterpret_cast<uintptr_t>(handles);
        b.count = count;
        int e = call(GDRHOOK_IOCTL_UNPIN_BATCH, &b);
        if (out)
            *out = b;
        return e;
    }
    int query(uint64_t handle, gdrhook_ioc_query *q) const
    {
        *q = gdrhook_ioc_query{};
        q->handle = handle;
        return call(GDRHOOK_IOCTL_QUERY, q);
    }
    int get_pages(uint64_t handle, uint32_t first, std::vector<uint64_t> *addrs,
                  gdrhook_ioc_get_pages *out = nullptr) const
    {
        gdrhook_ioc_get_pages g{};
        g.handle = handle;
        g.addrs = reinterpret_cast<uintptr_t>(addrs->data());
        g.max_entries = static_cast<uint32_t>(addrs->size());
        g.first = first;
        int e = call(GDRHOOK_IOCTL_GET_PAGES, &g);
        if (!e)
            addrs->resize(g.entries);
        if (out)
            *out = g;
        return e;
    }
    // Non-blocking read of whatever events are queued.
    int read_events(std::vector<gdrhook_event> *out) const
    {
        out->clear();
        for (;;) {
            gdrhook_event buf[64];
            ssize_t n = ::read(fd_.get(), buf, sizeof(buf));
            if (n < 0)
                return errno == EAGAIN ? 0 : errno;
            out->insert(out->end(), buf, buf + n / sizeof(gdrhook_event));
        }
    }

private:
    Fd fd_;
};

// /dev/gdrhook_tp: makes the test provider "free" memory like nvidia.ko.
class Provider {
public:
    Provider() : fd_(::open(GDRHOOK_TP_DEVICE_PATH, O_RDWR | O_CLOEXEC)) {}
    bool ok() const { return fd_.ok(); }
    int fire(const void *addr, uint64_t len, uint32_t *fired = nullptr) const
    {
        gdrhook_tp_fire f{};
        f.addr = reinterpret_cast<uintptr_t>(addr);
        f.length = len;
        int e = sys_ioctl(fd_.get(), GDRHOOK_TP_IOCTL_FIRE, &f);
        if (!e && fired)
            *fired = f.fired;
        return e;
    }

private:
    Fd fd_;
};

// /dev/gdrhook_te: makes dma-bufs whose exporter moves them (move_notify).
class Exporter {
public:
    Exporter() : fd_(::open(GDRHOOK_TE_DEVICE_PATH, O_RDWR | O_CLOEXEC)) {}
    bool ok() const { return fd_.ok(); }
    void close() { fd_.reset(); }
    // A new buffer of size bytes; flags: GDRHOOK_TE_PINNABLE or 0.
    int create(uint64_t size, uint32_t flags, Fd *dmabuf) const
    {
        gdrhook_te_create c{};
        c.size = size;
        c.flags = flags;
        int e = sys_ioctl(fd_.get(), GDRHOOK_TE_IOCTL_CREATE, &c);
        if (!e)
            *dmabuf = Fd(c.fd);
        return e;
    }
    // Moves the buffer; *notified: the attachments told (move_notify).
    int move(int dmabuf_fd, uint32_t *notified = nullptr, uint32_t flags = 0) const
    {
        gdrhook_te_move m{};
        m.fd = dmabuf_fd;
        m.flags = flags;
        int e = sys_ioctl(fd_.get(), GDRHOOK_TE_IOCTL_MOVE, &m);
        if (!e && notified)
            *notified = m.notified;
        return e;
    }

private:
    Fd fd_;
};

// One vgem dumb buffer exported as a dma-buf fd (vgem: a real exporter).
class VgemBuffer {
public:
    explicit VgemBuffer(uint64_t size);
    bool ok() const { return dmabuf_.ok(); }
    int fd() const { return dmabuf_.get(); }
    uint64_t size() const { return size_; }

private:
    Fd card_;
    Fd dmabuf_;
    uint64_t size_ = 0;
};

// Anonymous memory aligned to 64 KiB (a GPU page), touched and unmapped on exit.
class HostBuffer {
public:
    explicit HostBuffer(size_t len);
    HostBuffer(const HostBuffer &) = delete;
    HostBuffer &operator=(const HostBuffer &) = delete;
    ~HostBuffer();
    char *data() const { return base_; }
    size_t size() const { return len_; }

private:
    void *map_ = MAP_FAILED;
    size_t map_len_ = 0;
    char *base_ = nullptr;
    size_t len_ = 0;
};

// Anonymous memory of its own mapping (4 KiB pages, written to), which
// the test may unmap.
char *map_touched_pages(size_t pages);

// Waits up to timeout_ms for at least one event on dev (opened
// O_NONBLOCK) and reads what is queued; 0 or an errno (ETIMEDOUT).
int wait_events(const Gdrhook &dev, int timeout_ms, std::vector<gdrhook_event> *out);
// Waits up to timeout_ms for a debugfs counter to reach want.
bool wait_counter(const char *dir, const char *name, uint64_t want, int timeout_ms);
// Runs a shell command line (busybox); its exit status, or -1.
int shell(const std::string &cmd);
// insmod /modules/NAME.ko / rmmod NAME; the command's exit status.
int load_module(const char *name, const std::string &params = "");
int unload_module(const char *name);

// Where run.sh packs the shim, the fake driver and the programs run under it.
constexpr const char *kPackedDir = "/opt/gdrhook";
// Runs `program` from kPackedDir with the fake driver first on the library
// path, the extra environment, stdin and stdout as given (-1: inherited).
pid_t spawn(const std::string &program, std::vector<std::string> env, int in, int out);
// Waits for pid: whether it exited with status 0.
bool exited_ok(pid_t pid);

uint64_t counter(const char *dir, const char *name);
inline uint64_t gdr_counter(const char *name)
{
    return counter("/sys/kernel/debug/gdrhook", name);
}
inline uint64_t tp_counter(const char *name)
{
    return counter("/sys/kernel/debug/gdrhook_tp", name);
}
inline uint64_t te_counter(const char *name)
{
    return counter("/sys/kernel/debug/gdrhook_te", name);
}
void set_param(const char *module, const char *param, const std::string &value);
// The test provider's knobs back to their defaults (when it is loaded).
void reset_provider_params();
// The physical address behind a virtual address of this process (root).
uint64_t phys_addr(const void *va);
// First PCI device of the guest: the peer for dma-buf attachments.
PciAddr first_pci_device();
// A PIN request made to name that device as its peer (GDRHOOK_PIN_PEER).
void name_first_pci_device_as_peer(gdrhook_ioc_pin *p);
// Everything released: no pin, no open file, no provider table, no misuse.
void check_no_leaks(const char *when);
// The same, for a test that still holds its own open files.
void check_no_leaks_but_files(const char *when);

// A step made of several promises, each its own check: all run (one that
// fails does not hide the rest), each printed as "STEP: NAME held" or
// "FAILED", then nothing may be left pinned. 0 when every check held.
struct NamedCheck {
    const char *name;
    bool (*check)();
};
int run_named_checks(const char *step, const std::vector<NamedCheck> &checks);

// Runs fn in a forked child; true when it exited 0.
template <typename Fn> bool in_child(Fn fn)
{
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        std::fflush(stdout);
        std::_Exit(fn());
    }
    int st = 0;
    CHECK(::waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

class Stopwatch {
public:
    double seconds() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }

private:
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// The threads of a race test meet here, once per round.
struct Barrier {
    explicit Barrier(unsigned n) { pthread_barrier_init(&b, nullptr, n); }
    Barrier(const Barrier &) = delete;
    Barrier &operator=(const Barrier &) = delete;
    ~Barrier() { pthread_barrier_destroy(&b); }
    void wait() { pthread_barrier_wait(&b); }
    pthread_barrier_t b;
};

constexpr size_t kGpuPage = 64 * 1024;

int test_basic();
int test_races();
int test_bad_input();
int test_fuzz();
int test_kill();
int test_backend();
int test_pipeline();
int test_pin_vs_callback();
int test_callback_teardown();
int test_opener_only();
int test_errnos();
int test_bad_table();
int test_access();
int test_provider_life();
int test_failslab();
int test_move_notify();
int test_node();
int test_host_pages();
int test_pin_limits();
int test_memlock_user();
int test_integrated();
int test_closed_device();
int test_tegra();
int test_tegra_bad_table();

} // namespace vmtest
