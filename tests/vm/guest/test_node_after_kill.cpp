// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_node_after_kill.cpp - `gdrhook node` on a machine where a killed process left
// pins behind (issue 33). A process pins through the module (nv-p2p over
// the test provider, and a vgem dma-buf) and forks a child that inherits
// its /dev/gdrhook file and the dma-buf; the process is then killed with
// SIGKILL. Its pins outlive it, kept by the child: `gdrhook node` must
// name the child as their holder, say that their opener is gone, count
// them in its text and Prometheus output, and exit 1 (what an epilog
// drains the node on). The vgem dma-buf the child holds is DRM's, not
// the CUDA driver's: no pin of gdrhook's, never counted (issue 41). Once
// the child is killed too (the cleanup), the module holds nothing and
// `gdrhook node` exits 0. Both transcripts are printed to the guest log,
// each textfile between GDRHOOK-VM-TEXTFILE lines, which run.sh hands to
// promtool.
#include "common.hpp"

#include <csignal>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

namespace vmtest {
namespace {

constexpr const char *kTool = "/opt/gdrhook/gdrhook";
constexpr const char *kProm = "/tmp/gdrhook-node.prom";
constexpr int kNv = 8, kDmabuf = 2;

// Runs `gdrhook node ARGS`, prints what it wrote, returns its exit status
// and its output.
int node(const std::string &args, std::string *out)
{
    const std::string cmd = std::string(kTool) + " node --libnvml /nonexistent " + args +
                            " >/tmp/gdrhook-node.out 2>&1";
    const int status = shell(cmd);
    std::ifstream in("/tmp/gdrhook-node.out");
    std::stringstream text;
    text << in.rdbuf();
    *out = text.str();
    std::printf("node: $ gdrhook node %s  (exit %d)\n%s", args.c_str(), status, out->c_str());
    return status;
}

std::string slurp(const char *path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The textfile between marker lines, for run.sh to check with promtool.
void print_textfile(const std::string &text)
{
    std::printf("GDRHOOK-VM-TEXTFILE-BEGIN\n%sGDRHOOK-VM-TEXTFILE-END\n", text.c_str());
    std::fflush(stdout);
}

// The "gdrhook-" lines of the fdinfo of PID's /dev/gdrhook file, key to
// value; a key written twice counts as missing ("").
std::map<std::string, std::string> module_fdinfo(pid_t pid)
{
    std::map<std::string, std::string> lines;
    const std::string proc = "/proc/" + std::to_string(pid);
    DIR *fds = ::opendir((proc + "/fd").c_str());
    if (!fds)
        return lines;
    while (const dirent *e = ::readdir(fds)) {
        char target[64] = {};
        const std::string link = proc + "/fd/" + e->d_name;
        if (::readlink(link.c_str(), target, sizeof target - 1) <= 0 ||
            std::string(target) != GDRHOOK_DEVICE_PATH)
            continue;
        std::istringstream text(slurp((proc + "/fdinfo/" + e->d_name).c_str()));
        std::string line;
        while (std::getline(text, line)) {
            const size_t tab = line.find(":\t");
            if (line.rfind("gdrhook-", 0) != 0 || tab == std::string::npos)
                continue;
            const std::string key = line.substr(0, tab);
            lines[key] = lines.count(key) ? "" : line.substr(tab + 2);
        }
    }
    ::closedir(fds);
    return lines;
}

bool has(const std::string &text, const std::string &what)
{
    if (text.find(what) != std::string::npos)
        return true;
    std::printf("node: missing from the output: %s\n", what.c_str());
    return false;
}

} // namespace

int test_node()
{
    if (::access(kTool, X_OK) != 0) {
        std::printf("node: %s missing (run.sh packs the build's tools/gdrhook)\n", kTool);
        return 1;
    }
    // getpwuid() reads /etc/passwd (glibc's files backend is built in).
    ::mkdir("/etc", 0755);
    std::ofstream("/etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n";
    // The child that outlives its parent becomes ours, so we can reap it.
    CHECK(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);

    int ready[2];
    CHECK(::pipe(ready) == 0);
    const pid_t opener = ::fork();
    CHECK(opener >= 0);
    if (opener == 0) {
        Gdrhook dev;
        HostBuffer buf(kNv * kGpuPage);
        VgemBuffer vb(kDmabuf * 4096);
        const PciAddr peer = first_pci_device();
        if (!dev.ok() || !vb.ok())
            std::_Exit(1);
        uint64_t h;
        for (int i = 0; i < kNv; i++)
            if (dev.pin_nvp2p(buf.data() + i * kGpuPage, kGpuPage, &h))
                std::_Exit(1);
        for (int i = 0; i < kDmabuf; i++)
            if (dev.pin_dmabuf(vb.fd(), i * 4096, 4096, peer, &h))
                std::_Exit(1);
        const pid_t holder = ::fork(); // inherits the file and the dma-buf
        if (holder == 0) {
            for (;;)
                ::pause();
        }
        if (holder < 0 || ::write(ready[1], &holder, sizeof holder) != sizeof holder)
            std::_Exit(1);
        for (;;)
            ::pause();
    }
    ::close(ready[1]);
    pid_t holder = 0;
    CHECK(::read(ready[0], &holder, sizeof holder) == sizeof holder && holder > 0);
    ::close(ready[0]);
    // A failed check returns at once: the holder must not outlive the test
    // with the pins (the next step unloads the module).
    struct KillOnReturn {
        pid_t pid;
        ~KillOnReturn()
        {
            if (pid > 0 && ::kill(pid, SIGKILL) == 0)
                ::waitpid(pid, nullptr, 0);
        }
    } holder_guard{holder};
    int st = 0;
    CHECK(::kill(opener, SIGKILL) == 0);
    CHECK(::waitpid(opener, &st, 0) == opener && WIFSIGNALED(st));
    CHECK(gdr_counter("pins_live") == kNv + kDmabuf);

    // What the module writes is what the uapi header declares, the keys
    // gdrhook node reads: each once, with this file's values, and no other.
    const auto info = module_fdinfo(holder);
    for (const auto &line : info)
        std::printf("node: fdinfo of the holder: %s:\t%s\n", line.first.c_str(),
                    line.second.c_str());
    CHECK(info.size() == 6);
    CHECK(info.count(GDRHOOK_FDINFO_FILE) && !info.at(GDRHOOK_FDINFO_FILE).empty());
    CHECK(info.count(GDRHOOK_FDINFO_OPENER_PID) &&
          info.at(GDRHOOK_FDINFO_OPENER_PID) == std::to_string(opener));
    CHECK(info.count(GDRHOOK_FDINFO_OPENER_UID) && info.at(GDRHOOK_FDINFO_OPENER_UID) == "0");
    CHECK(info.count(GDRHOOK_FDINFO_ORPHANED) && info.at(GDRHOOK_FDINFO_ORPHANED) == "1");
    CHECK(info.count(GDRHOOK_FDINFO_PINS) &&
          info.at(GDRHOOK_FDINFO_PINS) == std::to_string(kNv + kDmabuf));
    CHECK(info.count(GDRHOOK_FDINFO_PINNED_BYTES) &&
          std::strtoull(info.at(GDRHOOK_FDINFO_PINNED_BYTES).c_str(), nullptr, 10) >=
              kNv * kGpuPage);

    std::string out;
    CHECK(node("", &out) == 1);
    CHECK(has(out, "pid " + std::to_string(holder) + " ("));
    CHECK(has(out, "opened by pid " + std::to_string(opener)));
    CHECK(has(out, "its opener is gone"));
    CHECK(has(out, "gdrhook, " + std::to_string(kNv + kDmabuf) + " pins"));
    CHECK(out.find("dmabuf, ") == std::string::npos); // vgem's is DRM PRIME's
    CHECK(has(out, "module: " + std::to_string(kNv + kDmabuf) + " pins live"));
    CHECK(has(out, "verdict: memory is still pinned"));
    CHECK(node("--user root --prometheus " + std::string(kProm), &out) == 1);
    const std::string prom = slurp(kProm);
    std::printf("node: %s after the kill:\n", kProm);
    print_textfile(prom);
    CHECK(has(prom, "gdrhook_node_pins{user=\"root\",kind=\"gdrhook\"} " +
                        std::to_string(kNv + kDmabuf) + "\n"));
    CHECK(has(prom,
              "gdrhook_node_orphaned_pins{user=\"root\"} " + std::to_string(kNv + kDmabuf) + "\n"));
    CHECK(has(prom, "gdrhook_node_unattributed_pins 0\n"));
    CHECK(has(prom, "gdrhook_node_pinned 1\n"));

    // The cleanup: the last holder goes, and with it every pin.
    CHECK(::kill(holder, SIGKILL) == 0);
    CHECK(::waitpid(holder, &st, 0) == holder && WIFSIGNALED(st));
    holder_guard.pid = 0;
    check_no_leaks("after the holder was killed");
    CHECK(node("--user root --prometheus " + std::string(kProm), &out) == 0);
    CHECK(has(out, "verdict: nothing pinned"));
    CHECK(has(slurp(kProm), "gdrhook_node_pinned 0\n"));
    std::printf("node: %s after the cleanup:\n", kProm);
    print_textfile(slurp(kProm));
    CHECK(::prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
    return 0;
}

} // namespace vmtest
