// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once
// A made-up /proc and /sys for `gdrhook node` and `gdrhook epilog`: only
// the processes, fds and module files a test puts there.
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace gdrhook::cli::test {

namespace fs = std::filesystem;

// A /proc and a /sys with only what a test puts there.
class FakeNode {
public:
    FakeNode()
    {
        const char *tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp ? tmp : "/tmp") + "/gdrhook-node-XXXXXX";
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        root_ = pattern;
        fs::create_directories(proc());
        fs::create_directories(sys());
    }
    ~FakeNode() { fs::remove_all(root_); }
    FakeNode(const FakeNode &) = delete;
    FakeNode &operator=(const FakeNode &) = delete;

    std::string proc() const { return root_ + "/proc"; }
    std::string sys() const { return root_ + "/sys"; }

    // A process with readable fds (none yet); with JOB, in the cgroup
    // Slurm's cgroup v2 plugin makes for the job's tasks.
    void process(int pid, unsigned uid, const std::string &comm, const std::string &job = "")
    {
        const std::string dir = proc() + "/" + std::to_string(pid);
        fs::create_directories(dir + "/fdinfo");
        write(dir + "/status", "Name:\t" + comm + "\nUid:\t" + std::to_string(uid) + "\t" +
                                   std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
                                   std::to_string(uid) + "\n");
        write(dir + "/comm", comm + "\n");
        write(dir + "/cgroup",
              job.empty()
                  ? "0::/user.slice/user-" + std::to_string(uid) + ".slice/session-3.scope\n"
                  : "0::/system.slice/slurmstepd.scope/job_" + job + "/step_0/user/task_0\n");
    }
    // A process of another user: an fdinfo the caller cannot list (the
    // tests may run as root, whom no mode stops: a file stands in for the
    // folder).
    void hidden_process(int pid, const std::string &job = "")
    {
        const std::string dir = proc() + "/" + std::to_string(pid);
        write(dir + "/status", "Name:\tother\nUid:\t1\t1\t1\t1\n");
        write(dir + "/fdinfo", "");
        if (!job.empty())
            write(dir + "/cgroup", "0::/system.slice/slurmstepd.scope/job_" + job + "/step_0\n");
    }
    // A process that ended after /proc was listed: its folder is gone.
    void vanished_process(int pid)
    {
        write(proc() + "/" + std::to_string(pid) + "/status", "Name:\tgone\nUid:\t0\t0\t0\t0\n");
    }
    // An open /dev/gdrhook: its fd link reaches the device whose number
    // module() writes (the host's /dev/null stands in for it).
    void gdrhook_fd(int pid, int fd, int file, int opener, unsigned opener_uid, bool orphaned,
                    uint64_t pins, uint64_t bytes)
    {
        fd_link(pid, fd, "/dev/null");
        gdrhook_fdinfo(pid, fd, file, opener, opener_uid, orphaned, pins, bytes);
    }
    // What the module's fdinfo says of the file now (pins come and go).
    void gdrhook_fdinfo(int pid, int fd, int file, int opener, unsigned opener_uid, bool orphaned,
                        uint64_t pins, uint64_t bytes)
    {
        // Its lines as the module writes them, keyed by the uapi header
        // both the module and the reader use.
        auto line = [](const char *key, uint64_t value) {
            return std::string(key) + ":\t" + std::to_string(value) + "\n";
        };
        fdinfo(pid, fd,
               "pos:\t0\nflags:\t02\nmnt_id:\t20\nino:\t5\n" + line(GDRHOOK_FDINFO_FILE, file) +
                   line(GDRHOOK_FDINFO_OPENER_PID, opener) +
                   line(GDRHOOK_FDINFO_OPENER_UID, opener_uid) +
                   line(GDRHOOK_FDINFO_ORPHANED, orphaned) + line(GDRHOOK_FDINFO_PINS, pins) +
                   line(GDRHOOK_FDINFO_PINNED_BYTES, bytes));
    }
    // NAME: what any holder may set (DMA_BUF_SET_NAME), newlines and all.
    void dmabuf_fd(int pid, int fd, int ino, uint64_t size, const std::string &exporter,
                   const std::string &name = "")
    {
        fd_link(pid, fd, "anon_inode:dmabuf");
        fdinfo(pid, fd,
               "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t" + std::to_string(ino) +
                   "\nsize:\t" + std::to_string(size) + "\ncount:\t1\nexp_name:\t" + exporter +
                   "\nname:\t" + name + "\n");
    }
    void other_fd(int pid, int fd)
    {
        fdinfo(pid, fd, "pos:\t0\nflags:\t02\nmnt_id:\t9\nino:\t77\n");
    }
    void module(uint64_t pins_live, uint64_t pinned_bytes, uint64_t files_open)
    {
        const std::string dir = sys() + "/class/misc/gdrhook/stats";
        fs::create_directories(dir);
        module_live(pins_live, pinned_bytes);
        write(dir + "/files_open", std::to_string(files_open) + "\n");
        struct stat null {};
        REQUIRE(::stat("/dev/null", &null) == 0);
        write(sys() + "/class/misc/gdrhook/dev", std::to_string(major(null.st_rdev)) + ":" +
                                                     std::to_string(minor(null.st_rdev)) + "\n");
    }

    // The module's live pins and bytes, each counter replaced whole, as
    // the kernel shows a counter: a reader racing a change sees the old
    // value or the new one.
    void module_live(uint64_t pins_live, uint64_t pinned_bytes)
    {
        const std::string dir = sys() + "/class/misc/gdrhook/stats";
        write_whole(dir + "/pins_live", std::to_string(pins_live) + "\n");
        write_whole(dir + "/pinned_bytes", std::to_string(pinned_bytes) + "\n");
    }
    // One of the module's other counters (kmod/stats.c).
    void module_counter(const std::string &name, uint64_t value)
    {
        write(sys() + "/class/misc/gdrhook/stats/" + name, std::to_string(value) + "\n");
    }
    // A PCI device in SYS/bus/pci/devices, bound to DRIVER ("" for none).
    void pci_device(const std::string &bus_id, const std::string &vendor,
                    const std::string &device_class, const std::string &driver)
    {
        const std::string dir = sys() + "/bus/pci/devices/" + bus_id;
        write(dir + "/vendor", vendor + "\n");
        write(dir + "/class", device_class + "\n");
        if (!driver.empty()) {
            fs::create_directories(sys() + "/bus/pci/drivers/" + driver);
            fs::create_symlink("../../../bus/pci/drivers/" + driver, dir + "/driver");
        }
    }

    // What a process's /proc/PID/NAME says (cgroup, environ...), whole.
    void proc_file(int pid, const std::string &name, const std::string &text)
    {
        write(proc() + "/" + std::to_string(pid) + "/" + name, text);
    }
    // An fd open on the host's file or device PATH, with a plain fdinfo:
    // what the kernel shows of a file that is not the module's.
    void file_fd(int pid, int fd, const std::string &path)
    {
        fd_link(pid, fd, path);
        fdinfo(pid, fd, "pos:\t0\nflags:\t02\nmnt_id:\t9\nino:\t77\n");
    }

private:
    void fd_link(int pid, int fd, const std::string &target)
    {
        const fs::path link = proc() + "/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
        fs::create_directories(link.parent_path());
        fs::remove(link);
        fs::create_symlink(target, link);
    }
    void fdinfo(int pid, int fd, const std::string &text)
    {
        write_whole(proc() + "/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd), text);
    }
    static void write_whole(const std::string &path, const std::string &text)
    {
        write(path + ".new", text);
        fs::rename(path + ".new", path);
    }
    static void write(const std::string &path, const std::string &text)
    {
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path) << text;
    }
    std::string root_;
};

constexpr uint64_t MiB = 1 << 20;

} // namespace gdrhook::cli::test
