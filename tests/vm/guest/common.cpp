// SPDX-License-Identifier: GPL-2.0-only OR MIT
// common.cpp - helpers shared by the in-guest tests.
#include "common.hpp"

#include <algorithm>
#include <dirent.h>
#include <poll.h>
#include <sys/wait.h>
#include <thread>

namespace vmtest {

namespace {

// The few DRM uapi definitions needed to make a vgem buffer (stable ABI).
struct drm_version_k {
    int version_major, version_minor, version_patchlevel;
    size_t name_len;
    char *name;
    size_t date_len;
    char *date;
    size_t desc_len;
    char *desc;
};
struct drm_mode_create_dumb_k {
    uint32_t height, width, bpp, flags;
    uint32_t handle, pitch;
    uint64_t size;
};
struct drm_prime_handle_k {
    uint32_t handle, flags;
    int32_t fd;
};
constexpr unsigned long kDrmIoctlVersion = _IOWR('d', 0x00, drm_version_k);
constexpr unsigned long kDrmIoctlCreateDumb = _IOWR('d', 0xB2, drm_mode_create_dumb_k);
constexpr unsigned long kDrmIoctlPrimeHandleToFd = _IOWR('d', 0x2d, drm_prime_handle_k);

Fd open_vgem_card()
{
    for (int i = 0; i < 16; i++) {
        std::string path = "/dev/dri/card" + std::to_string(i);
        Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
        if (!fd.ok())
            continue;
        char name[32] = {};
        drm_version_k v{};
        v.name = name;
        v.name_len = sizeof(name) - 1;
        if (sys_ioctl(fd.get(), kDrmIoctlVersion, &v) == 0 && std::string(name) == "vgem")
            return fd;
    }
    return Fd();
}

} // namespace

VgemBuffer::VgemBuffer(uint64_t size)
{
    card_ = open_vgem_card();
    if (!card_.ok())
        return;
    drm_mode_create_dumb_k c{};
    c.width = 1024; // 4 KiB rows of 32-bit pixels
    c.bpp = 32;
    c.height = static_cast<uint32_t>(size / 4096);
    if (sys_ioctl(card_.get(), kDrmIoctlCreateDumb, &c))
        return;
    drm_prime_handle_k p{};
    p.handle = c.handle;
    p.flags = O_CLOEXEC | O_RDWR;
    if (sys_ioctl(card_.get(), kDrmIoctlPrimeHandleToFd, &p))
        return;
    dmabuf_ = Fd(p.fd);
    size_ = c.size;
    // The dma-buf keeps the object alive; the card fd (and its GEM handle)
    // can go with this object.
}

HostBuffer::HostBuffer(size_t len) : len_(len)
{
    map_len_ = len + kGpuPage;
    map_ = ::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map_ != MAP_FAILED);
    uintptr_t p = (reinterpret_cast<uintptr_t>(map_) + kGpuPage - 1) & ~(uintptr_t)(kGpuPage - 1);
    base_ = reinterpret_cast<char *>(p);
    std::memset(base_, 0x5a, len_);
}

HostBuffer::~HostBuffer()
{
    if (map_ != MAP_FAILED)
        ::munmap(map_, map_len_);
}

int wait_events(const Gdrhook &dev, int timeout_ms, std::vector<gdrhook_event> *out)
{
    pollfd p{dev.fd(), POLLIN, 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n < 0)
        return errno;
    if (n == 0)
        return ETIMEDOUT;
    return dev.read_events(out);
}

bool wait_counter(const char *dir, const char *name, uint64_t want, int timeout_ms)
{
    Stopwatch sw;
    while (counter(dir, name) != want) {
        if (sw.seconds() * 1000 > timeout_ms)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

int shell(const std::string &cmd)
{
    int st = std::system(cmd.c_str());
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int load_module(const char *name, const std::string &params)
{
    return shell(std::string("insmod /modules/") + name + ".ko " + params);
}

int unload_module(const char *name)
{
    return shell(std::string("rmmod ") + name);
}

uint64_t counter(const char *dir, const char *name)
{
    std::string path = std::string(dir) + "/" + name;
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f)
        fail(__FILE__, __LINE__, "cannot read " + path);
    unsigned long long v = 0;
    int n = std::fscanf(f, "%llu", &v);
    std::fclose(f);
    if (n != 1)
        fail(__FILE__, __LINE__, "cannot parse " + path);
    return v;
}

void set_param(const char *module, const char *param, const std::string &value)
{
    std::string path = std::string("/sys/module/") + module + "/parameters/" + param;
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
        fail(__FILE__, __LINE__, "cannot open " + path);
    std::fputs(value.c_str(), f);
    if (std::fclose(f) != 0)
        fail(__FILE__, __LINE__, "cannot write " + path);
}

void reset_provider_params()
{
    if (::access("/sys/module/gdrhook_tp/parameters", F_OK) != 0)
        return;
    // The Tegra provider (tests/kmods/provider/tegra/) has race_delay_us alone.
    static const char *const defaults[][2] = {
        {"race_delay_us", "0"},   {"put_waits_for_callback", "1"}, {"fire_on_get_ms", "0"},
        {"hold_in_free_ms", "0"}, {"get_pages_errno", "0"},        {"bad_table", "0"},
    };
    for (const auto &d : defaults)
        if (::access((std::string("/sys/module/gdrhook_tp/parameters/") + d[0]).c_str(), F_OK) == 0)
            set_param("gdrhook_tp", d[0], d[1]);
}

uint64_t phys_addr(const void *va)
{
    Fd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    CHECK(fd.ok());
    uint64_t entry = 0;
    off_t off = static_cast<off_t>(reinterpret_cast<uintptr_t>(va) / 4096 * 8);
    CHECK(::pread(fd.get(), &entry, 8, off) == 8);
    CHECK(entry & (1ULL << 63)); // present
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    CHECK(pfn != 0); // zero only without CAP_SYS_ADMIN
    return pfn * 4096 + reinterpret_cast<uintptr_t>(va) % 4096;
}

PciAddr first_pci_device()
{
    std::vector<std::string> names;
    if (DIR *d = ::opendir("/sys/bus/pci/devices")) {
        while (dirent *e = ::readdir(d))
            if (e->d_name[0] != '.')
                names.emplace_back(e->d_name);
        ::closedir(d);
    }
    CHECK(!names.empty());
    std::sort(names.begin(), names.end());
    unsigned dom, bus, dev, fn;
    CHECK(std::sscanf(names[0].c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4);
    PciAddr a;
    a.domain = dom;
    a.bdf = static_cast<uint16_t>(bus << 8 | dev << 3 | fn);
    return a;
}

namespace {

void check_zero(const char *when, bool files)
{
    struct {
        const char *dir;
        const char *name;
        bool is_file_count;
    } zero[] = {
        {"/sys/kernel/debug/gdrhook", "pins_live", false},
        {"/sys/kernel/debug/gdrhook", "files_open", true},
        {"/sys/kernel/debug/gdrhook", "files_live", true},
        {"/sys/kernel/debug/gdrhook_tp", "tables_live", false},
        {"/sys/kernel/debug/gdrhook_tp", "pages_pinned", false},
        {"/sys/kernel/debug/gdrhook_tp", "bad_calls", false},
    };
    for (auto &z : zero) {
        if (z.is_file_count && !files)
            continue;
        uint64_t v = counter(z.dir, z.name);
        if (v != 0)
            fail(__FILE__, __LINE__,
                 std::string(when) + ": " + z.name + " = " + std::to_string(v) + ", want 0");
    }
}

} // namespace

// Runs `program` from kPackedDir with the fake driver first on the library path,
// the extra environment, stdin and stdout as given (-1: inherited).
pid_t spawn(const std::string &program, std::vector<std::string> env, int in, int out)
{
    const pid_t pid = ::fork();
    CHECK(pid >= 0);
    if (pid != 0)
        return pid;
    if (in >= 0)
        ::dup2(in, 0);
    if (out >= 0)
        ::dup2(out, 1);
    env.push_back("PATH=/bin");
    // The guest has no ld.so.cache: the machine's library folders, named
    // by its compiler's multiarch name (tests/meson.build), are listed.
    env.push_back(std::string("LD_LIBRARY_PATH=") + kPackedDir +
                  ":/lib/" GDRHOOK_MULTIARCH ":/usr/lib/" GDRHOOK_MULTIARCH);
    std::vector<const char *> envp;
    for (const auto &e : env)
        envp.push_back(e.c_str());
    envp.push_back(nullptr);
    const std::string path = std::string(kPackedDir) + "/" + program;
    const char *argv[] = {path.c_str(), nullptr};
    ::execve(path.c_str(), const_cast<char **>(argv), const_cast<char **>(envp.data()));
    std::perror("pipeline: execve");
    std::_Exit(127);
}

bool exited_ok(pid_t pid)
{
    int status = 0;
    CHECK(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void name_first_pci_device_as_peer(gdrhook_ioc_pin *p)
{
    PciAddr a = first_pci_device();
    p->flags |= GDRHOOK_PIN_PEER;
    p->peer_domain = a.domain;
    p->peer_bdf = a.bdf;
}

int run_named_checks(const char *step, const std::vector<NamedCheck> &checks)
{
    int failed = 0;
    for (const NamedCheck &c : checks) {
        const bool ok = c.check();
        std::printf("%s: %s %s\n", step, c.name, ok ? "held" : "FAILED");
        failed += ok ? 0 : 1;
    }
    check_no_leaks((std::string("after ") + step).c_str());
    return failed ? 1 : 0;
}

void check_no_leaks(const char *when)
{
    check_zero(when, true);
}

void check_no_leaks_but_files(const char *when)
{
    check_zero(when, false);
}

char *map_touched_pages(size_t pages)
{
    void *p =
        ::mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    std::memset(p, 0x5a, pages * 4096);
    return static_cast<char *>(p);
}

} // namespace vmtest
