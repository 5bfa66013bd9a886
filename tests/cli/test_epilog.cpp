// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook epilog`'s verdict on made-up /proc trees: a job is charged with
// its own processes' pins only, never with another job's or another
// user's, and answers as `gdrhook node --job` does on the same /proc.
#include "command/exit_code.h"
#include "epilog/epilog_command.h"
#include "fake_node.h"
#include "node/node_command.h"

#include <catch2/catch.hpp>

#include <functional>
#include <grp.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;
using namespace std::string_literals;

namespace {

struct Verdict {
    int status = -1;
    std::string text; // what it printed
};

// `gdrhook epilog --job JOB [--uid UID]` on NODE. In a child process: run
// as root with a uid, it takes that user's ids for good. BEFORE runs in
// the child first.
Verdict epilog(const FakeNode &node, const std::string &job, const std::string &uid = "",
               const std::function<void(EpilogOptions &)> &adjust = {},
               const std::function<void()> &before = {})
{
    EpilogOptions options;
    options.job = job;
    options.uid = uid;
    options.proc_root = node.proc();
    options.sys_root = node.sys();
    if (adjust)
        adjust(options);
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(pipe_fds[0]);
        if (before)
            before();
        std::ostringstream out;
        const int status = run_epilog(options, out, out);
        const std::string text = out.str();
        if (write(pipe_fds[1], text.data(), text.size()) < 0)
            _exit(100);
        _exit(status);
    }
    close(pipe_fds[1]);
    Verdict verdict;
    char buffer[4096];
    ssize_t got;
    while ((got = read(pipe_fds[0], buffer, sizeof buffer)) > 0)
        verdict.text.append(buffer, static_cast<size_t>(got));
    close(pipe_fds[0]);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    verdict.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return verdict;
}

// `gdrhook node --job JOB [--user USER]` on NODE: its exit status, its
// textfile (-o -) in TEXTFILE, else its report in REPORT.
int node_job(const FakeNode &node, const std::string &job, const std::string &user = "",
             std::string *textfile = nullptr, uint64_t fd_budget = ScanOptions::default_fd_budget,
             std::string *report = nullptr)
{
    NodeOptions options;
    options.job = job;
    options.user = user;
    options.proc_root = node.proc();
    options.sys_root = node.sys();
    options.libnvml = "/nonexistent/libnvidia-ml.so.1";
    options.settle_ms = 1;
    options.fd_budget = fd_budget;
    if (textfile)
        options.prometheus = "-";
    std::ostringstream out, err;
    const int status = run_node(options, out, err);
    if (textfile)
        *textfile = out.str();
    if (report)
        *report = out.str() + err.str();
    return status;
}

// A process under proctrack/linuxproc: in its user's login session, in
// no Slurm cgroup, with SLURM_JOB_ID=JOB in its environment.
void linuxproc_process(FakeNode &node, int pid, unsigned uid, const std::string &comm,
                       const std::string &job)
{
    node.process(pid, uid, comm);
    node.proc_file(pid, "environ", "HOME=/\0SLURM_JOB_ID="s + job + "\0SLURM_STEP_ID=0\0"s);
    node.proc_file(pid, "cgroup",
                   "0::/user.slice/user-" + std::to_string(uid) + ".slice/session-1.scope\n");
}

} // namespace

TEST_CASE("Another user's process that sets SLURM_JOB_ID to a job does not fail that job")
{
    // proctrack/linuxproc: no process is in a Slurm cgroup; job 9 is
    // user 1000's. User 2000 names job 9 in its environment and holds
    // /dev/gdrhook open, with no pin.
    FakeNode node;
    node.module(0, 0, 1);
    linuxproc_process(node, 100, 1000, "train", "9");
    linuxproc_process(node, 200, 2000, "attacker", "9");
    node.gdrhook_fd(200, 3, 31, 200, 2000, false, 0, 0);

    const Verdict named = epilog(node, "9", "1000");
    INFO(named.text);
    CHECK(named.status == exit_ok);
    CHECK_THAT(named.text, Catch::Contains(": OK;"));
    CHECK(node_job(node, "9", "1000") == exit_ok);
    // Where no one names the job's user nor a cgroup shows it, the
    // environment charges no process at all.
    CHECK(epilog(node, "9").status == exit_ok);
    CHECK(node_job(node, "9") == exit_ok);
}

TEST_CASE("A job_N cgroup a user made in their own systemd subtree is not Slurm's job N")
{
    FakeNode node;
    node.module(0, 0, 0);
    node.process(300, 1000, "train", "7"); // the real job 7, user 1000's
    node.process(201, 1001, "attacker");
    node.proc_file(201, "cgroup",
                   "0::/user.slice/user-1001.slice/user@1001.service/job_7/step_0\n");
    node.dmabuf_fd(201, 3, 6001, 1 << 20, "nv_dmabuf");
    node.process(202, 1001, "attacker");
    node.proc_file(202, "cgroup",
                   "0::/user.slice/user-1001.slice/user@1001.service/system.slice/"
                   "slurmstepd.scope/job_7/step_0/user/task_0\n");
    node.dmabuf_fd(202, 3, 6002, 1 << 20, "nv_dmabuf");

    const Verdict verdict = epilog(node, "7");
    INFO(verdict.text);
    CHECK(verdict.status == exit_ok);
    std::string textfile;
    CHECK(node_job(node, "7", "", &textfile) == exit_ok);
    INFO(textfile);
    CHECK_THAT(textfile, !Catch::Contains("hpc_job=\"7\""));
    CHECK_THAT(textfile, Catch::Contains("gdrhook_node_pins{user=\"1001\",kind=\"dmabuf\"} 2\n"));
}

TEST_CASE("gdrhook node --job and gdrhook epilog agree where only the environment tells the job")
{
    FakeNode node;
    node.module(0, 0, 0);
    linuxproc_process(node, 100, 1000, "train", "9");
    node.dmabuf_fd(100, 4, 6003, 4 << 20, "nv_dmabuf");

    const Verdict verdict = epilog(node, "9", "1000");
    INFO(verdict.text);
    CHECK(verdict.status == exit_findings);
    CHECK_THAT(verdict.text, Catch::Contains("left 1 pin(s), 4 MiB"));
    std::string textfile;
    CHECK(node_job(node, "9", "1000", &textfile) == exit_findings);
    CHECK_THAT(textfile, Catch::Contains("hpc_job=\"9\""));
    // Another job of the same user is not this one, for either command.
    CHECK(epilog(node, "10", "1000").status == exit_ok);
    CHECK(node_job(node, "10", "1000") == exit_ok);
}

TEST_CASE("Under cgroup v1 a process is its job's only where the path's uid is its own")
{
    FakeNode node;
    node.module(0, 0, 0);
    node.process(401, 1000, "train");
    node.proc_file(401, "cgroup", "4:freezer:/slurm/uid_1000/job_7/step_0/task_0\n");
    node.process(400, 2000, "other");
    node.proc_file(400, "cgroup", "4:freezer:/slurm/uid_1000/job_7/step_0/task_0\n");
    node.dmabuf_fd(400, 3, 6004, 1 << 20, "nv_dmabuf");
    node.process(402, 1000, "train");
    node.proc_file(402, "cgroup",
                   "7:memory:/slurm/uid_1000/job_8/step_batch/task_0\n1:name=systemd:/x\n");
    node.dmabuf_fd(402, 3, 6005, 1 << 20, "nv_dmabuf");

    const Verdict seven = epilog(node, "7");
    INFO(seven.text);
    CHECK(seven.status == exit_ok);
    CHECK(node_job(node, "7") == exit_ok);
    const Verdict eight = epilog(node, "8");
    INFO(eight.text);
    CHECK(eight.status == exit_findings);
    CHECK(node_job(node, "8") == exit_findings);
}

TEST_CASE("A file several of the job's processes hold is counted once in its pins and bytes")
{
    FakeNode node;
    node.module(4, 8 << 20, 1);
    node.process(100, 1000, "train", "5");
    node.process(101, 1000, "loader", "5"); // forked: holds the same file
    node.gdrhook_fd(100, 5, 9, 100, 1000, false, 4, 8 << 20);
    node.gdrhook_fd(101, 5, 9, 100, 1000, false, 4, 8 << 20);
    node.process(102, 1000, "helper", "5");
    node.dmabuf_fd(102, 6, 6006, 1 << 20, "nv_dmabuf");
    node.dmabuf_fd(102, 7, 6006, 1 << 20, "nv_dmabuf"); // the same buffer, twice

    const Verdict verdict = epilog(node, "5");
    INFO(verdict.text);
    CHECK(verdict.status == exit_findings);
    CHECK_THAT(verdict.text, Catch::Contains("left 5 pin(s), 9 MiB"));
}

TEST_CASE("Only gdrhook's own device is the module's file: a job holding another is not FAILED")
{
    // The fake module's device is /dev/null (1:3); /dev/zero and /dev/full
    // are character devices of the same major, as /dev/fuse or
    // /dev/net/tun share the misc major with /dev/gdrhook.
    FakeNode node;
    node.module(0, 0, 0);
    node.process(100, 1000, "train", "5");
    node.file_fd(100, 3, "/dev/zero");
    node.file_fd(100, 4, "/dev/full");
    node.file_fd(100, 5, "/");

    const Verdict verdict = epilog(node, "5");
    INFO(verdict.text);
    CHECK(verdict.status == exit_ok);
    CHECK_THAT(verdict.text, Catch::Contains(": OK;"));
    CHECK(node_job(node, "5") == exit_ok);
}

TEST_CASE("Past the fd budget what was not read is not seen, never clean; the job's are read first")
{
    auto small_budget = [](EpilogOptions &options) { options.fd_budget = 10; };
    FakeNode node;
    node.module(0, 0, 0);
    // Another user's process, read first by pid, holding many fds.
    node.process(100, 2000, "many");
    for (int fd = 0; fd < 50; fd++)
        node.other_fd(100, fd);
    // The job's process: 3 fds, nothing pinned.
    node.process(500, 1000, "train", "5");
    for (int fd = 0; fd < 3; fd++)
        node.other_fd(500, fd);

    // The job's verdict: its own fds were read first, the rest is not its.
    const Verdict job = epilog(node, "5", "1000", small_budget);
    INFO(job.text);
    CHECK(job.status == exit_ok);
    CHECK(node_job(node, "5", "1000", nullptr, 10) == exit_ok);
    // The whole node: not read, so not known to hold nothing.
    std::string text;
    CHECK(node_job(node, "", "", nullptr, 10, &text) == exit_unseen);
    CHECK_THAT(text, Catch::Contains("not read past the fd budget"));
    CHECK_THAT(text, !Catch::Contains("nothing pinned"));
    CHECK(node_job(node, "", "", nullptr) == exit_ok); // the default budget reads them all

    // The job's own process past the budget: its verdict cannot be OK.
    for (int fd = 3; fd < 30; fd++)
        node.other_fd(500, fd);
    const Verdict blind = epilog(node, "5", "1000", small_budget);
    INFO(blind.text);
    CHECK(blind.status == exit_findings);
    CHECK_THAT(blind.text, Catch::Contains("could not see 1 process(es)"));
    CHECK_THAT(blind.text, Catch::Contains("1 past the fd budget"));
    CHECK(node_job(node, "5", "1000", nullptr, 10) == exit_unseen);
}

TEST_CASE("The epilog reads the job's logs as the job's user alone, without root's groups")
{
    // Root is in a group (4242) that may read a log; the job's user
    // (4243) is not. Read with root's groups kept, the log would pass.
    REQUIRE(geteuid() == 0); // the tests run as root, as the Slurm plugin runs the epilog
    FakeNode node;
    node.module(0, 0, 0);
    const std::string logs = node.sys() + "/../logs";
    fs::create_directories(logs);
    for (const std::string &dir : {node.sys() + "/..", logs}) // the user's way to its logs
        fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    const char *data = std::getenv("CLI_DATA");
    REQUIRE(data != nullptr);
    const std::string log = logs + "/job.100.jsonl";
    fs::copy_file(std::string(data) + "/good_pid100.jsonl", log);
    REQUIRE(chown(log.c_str(), 4244, 4242) == 0);
    auto with_logs = [&](EpilogOptions &options) { options.events = logs + "/job.%p.jsonl"; };
    auto in_group = [] {
        const gid_t group = 4242;
        if (setgroups(1, &group) != 0)
            _exit(102);
    };

    REQUIRE(chmod(log.c_str(), 0644) == 0); // readable by all: the log itself passes
    const Verdict open = epilog(node, "5", "4243", with_logs, in_group);
    INFO(open.text);
    CHECK_THAT(open.text, Catch::Contains("log check: OK, 1 log(s)"));

    REQUIRE(chmod(log.c_str(), 0640) == 0); // only through group 4242
    const Verdict closed = epilog(node, "5", "4243", with_logs, in_group);
    INFO(closed.text);
    CHECK(closed.status == exit_findings);
    CHECK_THAT(closed.text, !Catch::Contains("log check: OK"));
}
