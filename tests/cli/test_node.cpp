// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook node` against made-up /proc and /sys trees: what it counts,
// whose it says it is, and the exit status an epilog acts on.
#include "exit_code.h"
#include "node/node_command.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>

using namespace gdrhook::cli;
namespace fs = std::filesystem;

namespace {

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

    // A process with readable fds (none yet).
    void process(int pid, unsigned uid, const std::string &comm)
    {
        const std::string dir = proc() + "/" + std::to_string(pid);
        fs::create_directories(dir + "/fdinfo");
        write(dir + "/status", "Name:\t" + comm + "\nUid:\t" + std::to_string(uid) + "\t" +
                                   std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
                                   std::to_string(uid) + "\n");
        write(dir + "/comm", comm + "\n");
    }
    // A process of another user: an fdinfo the caller cannot list (the
    // tests may run as root, whom no mode stops: a file stands in for the
    // folder).
    void hidden_process(int pid)
    {
        const std::string dir = proc() + "/" + std::to_string(pid);
        write(dir + "/status", "Name:\tother\nUid:\t1\t1\t1\t1\n");
        write(dir + "/fdinfo", "");
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
        fdinfo(pid, fd,
               "pos:\t0\nflags:\t02\nmnt_id:\t20\nino:\t5\ngdrhook-file:\t" + std::to_string(file) +
                   "\ngdrhook-opener-pid:\t" + std::to_string(opener) + "\ngdrhook-opener-uid:\t" +
                   std::to_string(opener_uid) + "\ngdrhook-orphaned:\t" + (orphaned ? "1" : "0") +
                   "\ngdrhook-pins:\t" + std::to_string(pins) + "\ngdrhook-pinned-bytes:\t" +
                   std::to_string(bytes) + "\n");
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
        write(dir + "/pins_live", std::to_string(pins_live) + "\n");
        write(dir + "/pinned_bytes", std::to_string(pinned_bytes) + "\n");
        write(dir + "/files_open", std::to_string(files_open) + "\n");
        struct stat null {};
        REQUIRE(::stat("/dev/null", &null) == 0);
        write(sys() + "/class/misc/gdrhook/dev", std::to_string(major(null.st_rdev)) + ":" +
                                                     std::to_string(minor(null.st_rdev)) + "\n");
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
        write(proc() + "/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd), text);
    }
    static void write(const std::string &path, const std::string &text)
    {
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path) << text;
    }
    std::string root_;
};

constexpr uint64_t MiB = 1 << 20;

int run(const FakeNode &node, const std::string &user, std::string &text,
        const std::string &prometheus = "")
{
    NodeOptions options;
    options.proc_root = node.proc();
    options.sys_root = node.sys();
    options.user = user;
    options.prometheus = prometheus;
    options.libnvml = "/nonexistent/libnvidia-ml.so.1";
    std::ostringstream out, err;
    const int status = run_node(options, out, err);
    text = out.str() + err.str();
    return status;
}

} // namespace

TEST_CASE("A killed opener's pins, kept by a child that holds its file, are counted as orphaned")
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

TEST_CASE("A file held by a parent and its forked child counts its pins once")
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

TEST_CASE("dma-bufs are read from fdinfo, each buffer once, and other fds are ignored")
{
    FakeNode node;
    node.process(300, 1000, "python3");
    node.process(301, 1000, "python3");
    node.dmabuf_fd(300, 10, 4242, 64 * MiB, "nvidia");
    node.dmabuf_fd(301, 11, 4242, 64 * MiB, "nvidia"); // the same buffer
    node.dmabuf_fd(300, 12, 4243, 2 * MiB, "vgem");
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

TEST_CASE("A process's name reaches the terminal escaped, whatever bytes it set (issue 39)")
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

TEST_CASE("A dma-buf named like the module's fdinfo is still a dma-buf, of its real size")
{
    FakeNode node;
    node.process(600, 65534, "nobody");
    // Issue 39: an unprivileged holder names its buffer so that its fdinfo
    // ends with the module's lines, and a size of its choosing.
    node.dmabuf_fd(600, 3, 4244, 2 * MiB, "vgem",
                   "\ngdrhook-file:\t1\ngdrhook-opener-uid:\t0\ngdrhook-pins:\t9\nsize:\t1");
    node.module(0, 0, 0);

    const NodeView view = build_node_view(scan_node(node.proc(), node.sys()), std::nullopt);
    CHECK(view.totals.gdrhook.pins == 0);
    CHECK(view.totals.dmabuf.pins == 1);
    CHECK(view.totals.dmabuf.bytes == 2 * MiB);
    std::string text;
    CHECK(run(node, "0", text) == exit_ok); // nothing is charged to root
}

TEST_CASE("Module pins that no readable file accounts for are unattributed and still fail")
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

TEST_CASE("The epilog's exit status: 0 once nothing is pinned, and per user with --user")
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

TEST_CASE("--prometheus writes the same figures as a node-exporter textfile")
{
    FakeNode node;
    node.process(200, 0, "worker");
    node.gdrhook_fd(200, 3, 7, 100, 0, true, 3, 3 * MiB);
    node.dmabuf_fd(200, 4, 99, MiB, "nvidia");
    node.module(4, 4 * MiB, 1);
    const std::string path = node.sys() + "/../node.prom";
    std::string text;
    CHECK(run(node, "", text, path) == exit_findings);
    std::ifstream in(path);
    std::stringstream prom;
    prom << in.rdbuf();
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
