// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node` against made-up /proc and /sys trees: what it counts,
// whose it says it is, and the exit status an epilog acts on.
#include "command/exit_code.h"
#include "fake_node.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"
#include "node/node_command.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

std::string slurp(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// What `promtool check metrics` (Debian's prometheus package) says of
// TEXT: "" when it passes. Every textfile these tests make goes through
// it; without promtool the check fails, never passes unchecked (meson
// sets GDRHOOKTEST_PROMTOOL where it found one).
std::string promtool_check(const std::string &text)
{
    const char *promtool = std::getenv("GDRHOOKTEST_PROMTOOL");
    if (!promtool || !*promtool)
        return "promtool not found (apt-get install prometheus; README, Test)";
    const char *tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp ? tmp : "/tmp") + "/gdrhook-promtool-XXXXXX";
    if (!mkdtemp(dir.data()))
        return "mkdtemp failed";
    std::ofstream(dir + "/in.prom") << text;
    const int status = std::system(("'" + std::string(promtool) + "' check metrics <'" + dir +
                                    "/in.prom' >'" + dir + "/said' 2>&1")
                                       .c_str());
    std::string said = slurp(dir + "/said");
    fs::remove_all(dir);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return "";
    return "promtool check metrics failed (status " + std::to_string(status) + "): " + said +
           "\non:\n" + text;
}

struct NodeRun {
    int status = -1;
    std::string out, err;
    std::string textfile; // what --prometheus wrote, to its file or stdout
};

// `gdrhook node` with OPTIONS on NODE; a textfile it wrote is checked by
// promtool.
NodeRun run_with(const FakeNode &node, NodeOptions options)
{
    options.proc_root = node.proc();
    if (options.sys_root == NodeOptions().sys_root)
        options.sys_root = node.sys();
    if (options.libnvml == NodeOptions().libnvml)
        options.libnvml = "/nonexistent/libnvidia-ml.so.1";
    std::ostringstream out, err;
    NodeRun result;
    result.status = run_node(options, out, err);
    result.out = out.str();
    result.err = err.str();
    if (options.prometheus == "-")
        result.textfile = result.out;
    else if (!options.prometheus.empty() && result.status != exit_input)
        result.textfile = slurp(options.prometheus);
    if (!options.prometheus.empty() && result.status != exit_input)
        CHECK(promtool_check(result.textfile) == "");
    return result;
}

int run(const FakeNode &node, const std::string &user, std::string &text,
        const std::string &prometheus = "")
{
    NodeOptions options;
    options.user = user;
    options.prometheus = prometheus;
    const NodeRun result = run_with(node, options);
    text = result.out + result.err;
    return result.status;
}

// The names of the families a textfile declares (# TYPE lines), and of
// those it has a sample of.
std::set<std::string> declared_families(const std::string &textfile)
{
    std::set<std::string> names;
    std::istringstream in(textfile);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("# TYPE ", 0) == 0)
            names.insert(line.substr(7, line.find(' ', 7) - 7));
    return names;
}
std::set<std::string> sampled_families(const std::string &textfile)
{
    std::set<std::string> names;
    std::istringstream in(textfile);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#')
            names.insert(line.substr(0, line.find_first_of(" {")));
    return names;
}

} // namespace

TEST_CASE("Every line the module adds to fdinfo (the uapi header's keys) reaches the scan",
          "[node]")
{
    // Each value distinct, so that a key read as another's, or not at
    // all, shows.
    FakeNode node;
    node.process(210, 2000, "holder");
    node.gdrhook_fd(210, 6, 17, 110, 1001, true, 5, 5 * MiB + 4096);
    node.module(5, 5 * MiB + 4096, 1);

    const NodeSnapshot snapshot = scan_node(node.proc(), node.sys());
    REQUIRE(snapshot.holdings.size() == 1);
    const PinHolding &h = snapshot.holdings[0];
    CHECK(h.kind == PinHolding::Kind::gdrhook_file);
    CHECK(h.key == "gdrhook:17");
    CHECK(h.opener_pid == 110);
    CHECK(h.opener_uid == 1001);
    CHECK(h.orphaned);
    CHECK(h.pins == 5);
    CHECK(h.bytes == 5 * MiB + 4096);
}

TEST_CASE("A killed opener's pins, kept by a child that holds its file, are counted as orphaned",
          "[node]")
{
    FakeNode node;
    node.process(200, 1000, "worker");
    node.gdrhook_fd(200, 3, 7, 100, 1000, true, 3, 3 * MiB);
    node.other_fd(200, 0);
    node.module(3, 3 * MiB, 1);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    REQUIRE(view.shown.holdings.size() == 1);
    CHECK(view.totals.gdrhook.pins == 3);
    CHECK(view.totals.gdrhook.bytes == 3 * MiB);
    CHECK(view.totals.gdrhook.orphaned_pins == 3);
    CHECK(view.totals.unattributed_pins == 0);
    CHECK(node_has_pins(view));

    std::string text;
    CHECK(run(node, "", text) == exit_findings);
    CHECK_THAT(text, Catch::Contains("pid 200 (worker)"));
    CHECK_THAT(text, Catch::Contains("opened by pid 100"));
    CHECK_THAT(text, Catch::Contains("its opener is gone"));
    CHECK_THAT(text, Catch::Contains("verdict: memory is still pinned"));
}

TEST_CASE("A file held by a parent and its forked child counts its pins once", "[node]")
{
    FakeNode node;
    node.process(100, 1000, "train");
    node.process(101, 1000, "loader");
    node.gdrhook_fd(100, 5, 9, 100, 1000, false, 4, 8 * MiB);
    node.gdrhook_fd(101, 5, 9, 100, 1000, false, 4, 8 * MiB);
    node.module(4, 8 * MiB, 1);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.shown.holdings.size() == 2); // both holders are listed
    CHECK(view.totals.gdrhook.pins == 4);
    CHECK(view.totals.gdrhook.bytes == 8 * MiB);
    CHECK(view.totals.gdrhook.orphaned_pins == 0);
    CHECK(view.totals.unattributed_pins == 0);
}

TEST_CASE("dma-bufs are read from fdinfo, each buffer once, and other fds are ignored", "[node]")
{
    FakeNode node;
    node.process(300, 1000, "python3");
    node.process(301, 1000, "python3");
    node.dmabuf_fd(300, 10, 4242, 64 * MiB, "nvidia");
    node.dmabuf_fd(301, 11, 4242, 64 * MiB, "nvidia"); // the same buffer
    node.dmabuf_fd(300, 12, 4243, 2 * MiB, "nv_dmabuf");
    node.other_fd(300, 1);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.shown.holdings.size() == 3);
    CHECK(view.totals.dmabuf.pins == 2);
    CHECK(view.totals.dmabuf.bytes == 66 * MiB);
    CHECK_FALSE(view.shown.module.loaded);
    std::string text;
    CHECK(run(node, "", text) == exit_findings);
    CHECK_THAT(text, Catch::Contains("exporter nvidia"));
    CHECK_THAT(text, Catch::Contains("module: not loaded"));
}

TEST_CASE("A process's name reaches the terminal escaped, whatever bytes it set (issue 39)",
          "[node]")
{
    // What prctl(PR_SET_NAME) lets any process put in /proc/PID/comm: a
    // title-setting escape, a bell, a carriage return that would let the
    // rest of the line overwrite what root reads, a C1 CSI.
    FakeNode node;
    node.process(500, 1000,
                 "\x1b]0;x\x07\r\x9b"
                 "2J\\");
    node.dmabuf_fd(500, 10, 4242, 64 * MiB, "nvidia");
    std::string text;
    CHECK(run(node, "", text) == exit_findings);
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        INFO("byte " << static_cast<int>(byte) << " in: " << text);
        CHECK(((byte >= 0x20 && byte < 0x7f) || byte == '\n'));
    }
    CHECK_THAT(text, Catch::Contains("pid 500 (\\x1b]0;x\\x07\\x0d\\x9b2J\\\\)"));
}

TEST_CASE("A dma-buf named like the module's fdinfo is still a dma-buf, of its real size", "[node]")
{
    FakeNode node;
    node.process(600, 65534, "nobody");
    // Issue 39: an unprivileged holder names its buffer so that its fdinfo
    // ends with the module's lines, and a size of its choosing.
    node.dmabuf_fd(600, 3, 4244, 2 * MiB, "nv_dmabuf",
                   "\ngdrhook-file:\t1\ngdrhook-opener-uid:\t0\ngdrhook-pins:\t9\nsize:\t1");
    node.module(0, 0, 0);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.totals.gdrhook.pins == 0);
    CHECK(view.totals.dmabuf.pins == 1);
    CHECK(view.totals.dmabuf.bytes == 2 * MiB);
    std::string text;
    CHECK(run(node, "0", text) == exit_ok); // nothing is charged to root
}

TEST_CASE("Module pins that no readable file accounts for are unattributed and still fail",
          "[node]")
{
    FakeNode node;
    node.hidden_process(400);
    node.process(401, 1000, "bash");
    node.vanished_process(402); // not counted as unreadable
    node.module(5, 10 * MiB, 1);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.shown.unreadable == 1);
    CHECK(view.totals.unattributed_pins == 5);
    CHECK(view.totals.unattributed_bytes == 10 * MiB);
    std::string text;
    CHECK(run(node, "", text) == exit_findings);
    CHECK_THAT(text, Catch::Contains("unattributed: 5 module pins"));
    CHECK_THAT(text, Catch::Contains("unreadable: 1 of 3 processes"));
}

TEST_CASE("The epilog's exit status: 0 once nothing is pinned, and per user with --user", "[node]")
{
    FakeNode node;
    node.process(500, 1000, "job");
    node.module(0, 0, 0);
    std::string text;
    CHECK(run(node, "", text) == exit_ok);
    CHECK_THAT(text, Catch::Contains("verdict: nothing pinned"));

    // Pins charged to uid 1000 (opened by it), held by a process of root.
    node.process(501, 0, "helper");
    node.gdrhook_fd(501, 4, 11, 500, 1000, true, 2, 2 * MiB);
    node.module(2, 2 * MiB, 1);
    CHECK(run(node, "1000", text) == exit_findings);
    CHECK(run(node, "0", text) == exit_ok);
    CHECK(run(node, "no-such-user-here", text) == exit_input);
}

TEST_CASE("--prometheus writes the same figures as a node-exporter textfile", "[node]")
{
    FakeNode node;
    node.process(200, 0, "worker");
    node.gdrhook_fd(200, 3, 7, 100, 0, true, 3, 3 * MiB);
    node.dmabuf_fd(200, 4, 99, MiB, "nvidia");
    node.module(4, 4 * MiB, 1);
    const std::string path = node.sys() + "/../node.prom";
    std::string text;
    CHECK(run(node, "", text, path) == exit_findings);
    std::stringstream prom(slurp(path));
    CHECK_THAT(
        prom.str(),
        Catch::Contains("gdrhook_node_pinned_bytes{user=\"root\",kind=\"gdrhook\"} 3145728\n"));
    CHECK_THAT(
        prom.str(),
        Catch::Contains("gdrhook_node_pinned_bytes{user=\"root\",kind=\"dmabuf\"} 1048576\n"));
    CHECK_THAT(prom.str(),
               Catch::Contains("gdrhook_node_pins{user=\"root\",kind=\"gdrhook\"} 3\n"));
    CHECK_THAT(prom.str(), Catch::Contains("gdrhook_node_orphaned_pins{user=\"root\"} 3\n"));
    CHECK_THAT(prom.str(), Catch::Contains("gdrhook_node_unattributed_pins 1\n"));
    CHECK_THAT(prom.str(), Catch::Contains("gdrhook_node_module_pins_live 4\n"));
    CHECK_THAT(prom.str(), Catch::Contains("gdrhook_node_pinned 1\n"));
    CHECK_THAT(prom.str(), Catch::Contains("# TYPE gdrhook_node_pinned gauge\n"));

    CHECK(run(node, "", text, "/nonexistent/dir/node.prom") == exit_input);
}

// Issue 41: the node view as an operator's cluster meets it.

TEST_CASE("Only the CUDA driver's dma-bufs count: a DRM buffer's or RDMA's holder is not pinned",
          "[node]")
{
    // What /proc/PID/fdinfo shows of a dma-buf names its exporter: the
    // CUDA driver's (what gdrhook exports; "nv_dmabuf" on an H200 with a
    // current driver, "nvidia", KBUILD_MODNAME, on older ones), DRM PRIME's
    // (a desktop's or vgem's buffers), an RDMA device's, a heap's.
    FakeNode node;
    node.process(700, 4001, "Xorg");
    node.dmabuf_fd(700, 10, 5001, 8 * MiB, "drm");
    node.dmabuf_fd(700, 11, 5002, 4 * MiB, "i915");
    node.process(701, 4002, "rdma-app");
    node.dmabuf_fd(701, 10, 5003, 2 * MiB, "ib_uverbs");
    node.dmabuf_fd(701, 11, 5004, 2 * MiB, "system");
    node.module(0, 0, 0);
    std::string text;
    CHECK(run(node, "", text) == exit_ok);
    CHECK_THAT(text, Catch::Contains("verdict: nothing pinned"));
    CHECK(run(node, "4001", text) == exit_ok);

    node.process(702, 4003, "train");
    node.dmabuf_fd(702, 12, 5005, 64 * MiB, "nv_dmabuf");
    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.totals.dmabuf.pins == 1);
    CHECK(view.totals.dmabuf.bytes == 64 * MiB);
    CHECK(run(node, "", text) == exit_findings);
    CHECK(run(node, "4003", text) == exit_findings);
    CHECK(run(node, "4002", text) == exit_ok);
}

TEST_CASE("A run that cannot read most processes' fds says it could not see, not nothing pinned",
          "[node]")
{
    FakeNode node;
    node.process(800, 4001, "bash");
    for (int pid = 801; pid < 806; pid++)
        node.hidden_process(pid);
    node.module(0, 0, 0);
    std::string text;
    CHECK(run(node, "", text) == exit_unseen);
    CHECK_THAT(text, Catch::Contains("verdict: could not see 5 of 6 processes"));
    CHECK_THAT(text, !Catch::Contains("nothing pinned"));
    CHECK(run(node, "4001", text) == exit_unseen);
    // A job's verdict needs only the job's processes read: everyone may
    // read which job a process is in (/proc/PID/cgroup).
    node.hidden_process(806, "77");
    NodeOptions options;
    options.job = "78";
    CHECK(run_with(node, options).status == exit_ok);
    options.job = "77";
    const NodeRun job = run_with(node, options);
    CHECK(job.status == exit_unseen);
    CHECK_THAT(job.out, Catch::Contains("verdict: could not see 1 of job 77's processes"));
    // Pins it does see are still the verdict.
    node.dmabuf_fd(800, 3, 5006, MiB, "nv_dmabuf");
    CHECK(run(node, "", text) == exit_findings);
}

TEST_CASE("As an unprivileged user on the real /proc, gdrhook node says it could not see", "[node]")
{
    // What a user meets who runs it without root: the kernel lets them
    // read only their own processes' fds. Tests run as root here, so the
    // child drops to nobody first.
    FakeNode node; // only for an empty /sys: no module, no GPU
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(pipe_fds[0]);
        if (::geteuid() == 0 &&
            (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
            ::_exit(100);
        NodeOptions options;
        options.proc_root = "/proc";
        options.sys_root = node.sys();
        options.libnvml = "/nonexistent/libnvidia-ml.so.1";
        std::ostringstream out, err;
        const int status = run_node(options, out, err);
        const std::string text = out.str() + err.str();
        if (::write(pipe_fds[1], text.data(), text.size()) < 0)
            ::_exit(101);
        ::_exit(status);
    }
    ::close(pipe_fds[1]);
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
        text.append(buffer, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO(text);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == exit_unseen);
    CHECK_THAT(text, Catch::Contains("verdict: could not see"));
    CHECK_THAT(text, !Catch::Contains("nothing pinned"));
}

TEST_CASE("Module pins no process accounts for fail the node, not each user's epilog", "[node]")
{
    FakeNode node;
    node.process(900, 4001, "bash");
    node.module(5, 10 * MiB, 1);
    std::string text;
    CHECK(run(node, "4001", text) == exit_ok);
    CHECK_THAT(text, Catch::Contains("unattributed: 5 module pins"));
    CHECK(run(node, "", text) == exit_findings);
}

TEST_CASE("An idle node's textfile has a sample in every family, so that sum() gives 0", "[node]")
{
    for (const bool loaded : {false, true}) {
        FakeNode node;
        node.process(1000, 4001, "bash");
        if (loaded)
            node.module(0, 0, 0);
        const std::string path = node.sys() + "/../node.prom";
        NodeOptions options;
        options.prometheus = path;
        const NodeRun result = run_with(node, options);
        INFO(result.textfile);
        CHECK(result.status == exit_ok);
        CHECK(declared_families(result.textfile).size() >= 10);
        CHECK(sampled_families(result.textfile) == declared_families(result.textfile));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_pins 0\n"));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_pinned_bytes 0\n"));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_orphaned_pins 0\n"));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_bar1_total_bytes 0\n"));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_module_pins_live 0\n"));
        CHECK_THAT(result.textfile, Catch::Contains("\ngdrhook_node_pinned 0\n"));
    }
}

TEST_CASE("One textfile holds every user's and job's series, whatever --user asks", "[node]")
{
    // The epilog of one job writes the node's textfile: it must not
    // become that user's alone.
    FakeNode node;
    node.process(1100, 4001, "train", "41");
    node.gdrhook_fd(1100, 3, 21, 1100, 4001, false, 3, 3 * MiB);
    node.process(1101, 4002, "train", "42");
    node.gdrhook_fd(1101, 3, 22, 1101, 4002, false, 2, 2 * MiB);
    node.dmabuf_fd(1101, 4, 5007, MiB, "nv_dmabuf");
    // A helper in job 42 holds job 41's file too: its pins stay job 41's
    // while their opener holds them.
    node.process(1102, 4001, "helper", "42");
    node.gdrhook_fd(1102, 5, 21, 1100, 4001, false, 3, 3 * MiB);
    node.module(5, 5 * MiB, 2);
    const std::string path = node.sys() + "/../node.prom";
    NodeOptions options;
    options.user = "4001";
    options.prometheus = path;
    const NodeRun result = run_with(node, options);
    INFO(result.textfile);
    CHECK(result.status == exit_findings);
    const std::string &prom = result.textfile;
    CHECK_THAT(prom, Catch::Contains(
                         "gdrhook_node_pins{user=\"4001\",hpc_job=\"41\",kind=\"gdrhook\"} 3\n"));
    CHECK_THAT(prom, Catch::Contains(
                         "gdrhook_node_pins{user=\"4002\",hpc_job=\"42\",kind=\"gdrhook\"} 2\n"));
    CHECK_THAT(prom, Catch::Contains(
                         "gdrhook_node_pins{user=\"4002\",hpc_job=\"42\",kind=\"dmabuf\"} 1\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_pinned_bytes{user=\"4002\",hpc_job=\"42\","
                                     "kind=\"gdrhook\"} 2097152\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_pinned 1\n"));
    CHECK_THAT(prom, !Catch::Contains("user=\"4001\",hpc_job=\"42\""));
    // The text report and the verdict are still the user's.
    CHECK_THAT(result.out, !Catch::Contains("pid 1101 "));

    // --job judges what the job's processes hold.
    NodeOptions by_job;
    by_job.job = "42";
    CHECK(run_with(node, by_job).status == exit_findings);
    by_job.job = "43";
    CHECK(run_with(node, by_job).status == exit_ok);
    by_job.job = "4x";
    CHECK(run_with(node, by_job).status == exit_input);
}

TEST_CASE("The module's cumulative figures are counters, its live ones gauges", "[node]")
{
    FakeNode node;
    node.module(0, 0, 0);
    node.module_counter("pins_total", 17);
    node.module_counter("callbacks", 5);
    node.module_counter("late_callbacks", 1);
    node.module_counter("revocations", 2);
    node.module_counter("events_dropped", 3);
    node.module_counter("files_live", 1);
    NodeOptions options;
    options.prometheus = node.sys() + "/../node.prom";
    const NodeRun result = run_with(node, options);
    const std::string &prom = result.textfile;
    INFO(prom);
    CHECK_THAT(prom, Catch::Contains("# TYPE gdrhook_node_module_pins_total counter\n"
                                     "gdrhook_node_module_pins_total 17\n"));
    CHECK_THAT(prom, Catch::Contains("# TYPE gdrhook_node_module_callbacks_total counter\n"
                                     "gdrhook_node_module_callbacks_total 5\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_module_late_callbacks_total 1\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_module_revocations_total 2\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_module_events_dropped_total 3\n"));
    CHECK_THAT(prom, Catch::Contains("# TYPE gdrhook_node_module_files_live gauge\n"
                                     "gdrhook_node_module_files_live 1\n"));
}

TEST_CASE("GPU series carry DCGM's labels, and BAR1's total beside its use", "[node]")
{
    const char *fake_nvml = std::getenv("GDRHOOKTEST_FAKE_NVML");
    REQUIRE(fake_nvml != nullptr);
    FakeNode node;
    // Listed out of order: DCGM (and NVML) number GPUs in PCI bus order.
    node.pci_device("0000:b5:00.0", "0x10de", "0x030200", "nvidia");
    node.pci_device("0000:3b:00.0", "0x10de", "0x030200", "nvidia");
    node.pci_device("0000:00:1f.0", "0x8086", "0x060100", "");
    NodeOptions options;
    options.libnvml = fake_nvml;
    options.prometheus = node.sys() + "/../node.prom";
    const NodeRun result = run_with(node, options);
    const std::string &prom = result.textfile;
    INFO(prom);
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    const std::string gpu0 =
        "{gpu=\"0\",pci_bus_id=\"00000000:3B:00.0\",Hostname=\"" + std::string(host) + "\"}";
    const std::string gpu1 =
        "{gpu=\"1\",pci_bus_id=\"00000000:B5:00.0\",Hostname=\"" + std::string(host) + "\"}";
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_bar1_total_bytes" + gpu0 + " 274877906944\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_bar1_used_bytes" + gpu0 + " 61865984\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_bar1_total_bytes" + gpu1 + " 274877906944\n"));
    CHECK_THAT(prom, Catch::Contains("gdrhook_node_bar1_used_bytes" + gpu1 + " 189792256\n"));
}

TEST_CASE("--prometheus - writes the textfile to stdout, and nothing else there", "[node]")
{
    FakeNode node;
    node.process(1200, 4001, "train");
    node.dmabuf_fd(1200, 3, 5008, MiB, "nv_dmabuf");
    const fs::path cwd_dash = fs::current_path() / "-";
    fs::remove(cwd_dash);
    NodeOptions options;
    options.prometheus = "-";
    const NodeRun result = run_with(node, options);
    CHECK(result.status == exit_findings);
    CHECK(result.out.rfind("# HELP ", 0) == 0);
    CHECK_THAT(result.out, Catch::Contains("gdrhook_node_pinned 1\n"));
    CHECK_THAT(result.out, !Catch::Contains("verdict"));
    CHECK_FALSE(fs::exists(cwd_dash));
    fs::remove(cwd_dash);
}

TEST_CASE("An unpin while /proc is read does not look unattributed", "[node]")
{
    // Pins go, one at a time, while the node is scanned again and again:
    // a scan that read the module's counter before /proc finds fewer pins
    // in the files than the counter held. No scan may call any of them
    // unattributed (an invariant: how the two interleave differs per run).
    // The pins go for longer than a scan and its two reads again take
    // (20 ms apart here), and faster than a scan reads /proc.
    constexpr int processes = 200;
    FakeNode node;
    for (int i = 0; i < processes; i++) {
        node.process(2000 + i, 4001, "train");
        node.gdrhook_fd(2000 + i, 3, 100 + i, 2000 + i, 4001, false, 1, MiB);
    }
    node.module(processes, processes * MiB, processes);
    std::atomic<bool> done{false};
    std::thread unpinning([&] {
        for (int i = 0; i < processes; i++) {
            node.gdrhook_fdinfo(2000 + i, 3, 100 + i, 2000 + i, 4001, false, 0, 0);
            node.module_live(processes - i - 1, (processes - i - 1) * MiB);
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        done = true;
    });
    int scans = 0, unattributed = 0;
    NodeOptions options;
    options.settle_ms = 20;
    while (!done || scans == 0) {
        scans++;
        if (run_with(node, options).out.find("unattributed") != std::string::npos)
            unattributed++;
    }
    unpinning.join();
    INFO(scans << " scans");
    CHECK(unattributed == 0);
}

TEST_CASE("An unpin the module has not finished does not look unattributed", "[node]")
{
    // The module drops a pin from its file (what fdinfo shows) before it
    // drops its node-wide counter, once the driver or exporter has let the
    // memory go (kmod/pin_table.c, gdrhook_pin_destroy): for a while the
    // counter holds a pin no file shows. Here that while is 20 ms.
    FakeNode node;
    node.process(2100, 4001, "train");
    node.gdrhook_fd(2100, 3, 200, 2100, 4001, false, 0, 0);
    node.module(1, MiB, 1);
    std::thread finishing([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        node.module_live(0, 0);
    });
    std::string text;
    const int status = run(node, "", text);
    finishing.join();
    INFO(text);
    CHECK(status == exit_ok);
    CHECK_THAT(text, !Catch::Contains("unattributed"));
}
