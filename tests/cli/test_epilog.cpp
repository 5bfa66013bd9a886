// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook epilog`'s charge (issue 41): which job a process runs for, and
// that a job is charged with its own processes' pins only, never with
// those of another job of the same user.
#include "epilog/epilog_command.h"
#include "epilog/job_of_process.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace gdrhook::cli;
namespace fs = std::filesystem;

namespace {

// A /proc with only the cgroup and environ files a test writes.
struct FakeProc {
    FakeProc()
    {
        const char *tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp ? tmp : "/tmp") + "/gdrhook-epilog-XXXXXX";
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        root = pattern;
    }
    ~FakeProc() { fs::remove_all(root); }
    void file(int pid, const std::string &name, const std::string &text) const
    {
        fs::create_directories(root + "/" + std::to_string(pid));
        std::ofstream(root + "/" + std::to_string(pid) + "/" + name) << text;
    }
    std::string root;
};

PinHolding dmabuf_of(int pid, unsigned uid, const std::string &key)
{
    PinHolding h;
    h.kind = PinHolding::Kind::dmabuf;
    h.pid = pid;
    h.uid = uid;
    h.key = key;
    h.pins = 1;
    h.bytes = 4 << 20;
    return h;
}

} // namespace

TEST_CASE("a process's job and step come from its Slurm cgroup")
{
    // cgroup v2 (Slurm 22.05's cgroup/v2) and v1 (one line per hierarchy).
    JobOfProcess v2 =
        job_of_cgroup_line("0::/system.slice/slurmstepd.scope/job_41/step_3/user/task_0");
    CHECK(v2.job == "41");
    CHECK(v2.step == "3");
    JobOfProcess v1 = job_of_cgroup_line("4:freezer:/slurm/uid_1000/job_7/step_batch/task_0");
    CHECK(v1.job == "7");
    CHECK(v1.step == "batch");
    CHECK(job_of_cgroup_line("0::/user.slice/job_x/step_1").job.empty());
    CHECK(job_of_cgroup_line("0::/job_12abc").job.empty());
    CHECK(job_of_cgroup_line("no colons").job.empty());
}

TEST_CASE("a process's job and step come from Slurm's variables in its environment")
{
    using namespace std::string_literals;
    JobOfProcess of = job_of_environment("HOME=/x\0SLURM_JOB_ID=12\0SLURM_STEP_ID=0\0"s);
    CHECK(of.job == "12");
    CHECK(of.step == "0");
    CHECK(job_of_environment("SLURM_STEP_ID=0\0"s).step.empty()); // no job, no step
    CHECK(job_of_environment("XSLURM_JOB_ID=12\0"s).job.empty());
}

TEST_CASE("a job is charged with its own processes' pins, not a sibling job's of the same user")
{
    using namespace std::string_literals;
    FakeProc proc;
    proc.file(100, "environ", "SLURM_JOB_ID=5\0SLURM_STEP_ID=0\0"s); // the job's leftover
    proc.file(200, "environ", "SLURM_JOB_ID=6\0SLURM_STEP_ID=0\0"s); // its sibling, same user
    proc.file(300, "cgroup", "0::/system.slice/slurmstepd.scope/job_5/step_1/user/task_0\n");
    proc.file(400, "environ", "HOME=/\0"s); // no job's
    NodeSnapshot snapshot;
    snapshot.holdings = {dmabuf_of(100, 1000, "dmabuf:1"), dmabuf_of(200, 1000, "dmabuf:2"),
                         dmabuf_of(300, 1000, "dmabuf:3"), dmabuf_of(400, 1000, "dmabuf:4")};

    JobPins step0 = pins_of_job(snapshot, proc.root, "5", "0", 1000u);
    REQUIRE(step0.job.size() == 1);
    CHECK(step0.job[0].pid == 100);
    CHECK(step0.other_jobs_pins == 2); // the sibling job's, and step 1's of job 5
    CHECK(step0.no_job_pins == 1);

    JobPins whole = pins_of_job(snapshot, proc.root, "5", "", 1000u);
    CHECK(whole.job.size() == 2);
    CHECK(pins_of_job(snapshot, proc.root, "6", "0", 1000u).job.size() == 1);
    CHECK(pins_of_job(snapshot, proc.root, "7", "0", 1000u).job.empty());
}

TEST_CASE("a process the epilog cannot read counts only where it may be the job's")
{
    using namespace std::string_literals;
    FakeProc proc;
    proc.file(1, "cgroup", "0::/init.scope\n");            // root's, of no job
    proc.file(2, "cgroup", "0::/x/job_5/step_0/task_0\n"); // the job's own
    proc.file(3, "cgroup", "0::/x/job_6/step_0/task_0\n"); // another job's
    NodeSnapshot snapshot;
    for (auto [pid, uid] : {std::pair{1, 0u}, {2, 1000u}, {3, 1000u}}) {
        PinHolding p;
        p.pid = pid;
        p.uid = uid;
        snapshot.unreadable_processes.push_back(p);
    }
    snapshot.unreadable = 3;
    CHECK(pins_of_job(snapshot, proc.root, "5", "0", 1000u).unreadable == 1);
    CHECK(pins_of_job(snapshot, proc.root, "6", "0", 1000u).unreadable == 1);
    CHECK(pins_of_job(snapshot, proc.root, "6", "0", 0u).unreadable == 2); // root's pid 1 too
    CHECK(pins_of_job(snapshot, proc.root, "6", "0", std::nullopt).unreadable == 2);
}
