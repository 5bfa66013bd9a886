// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Which Slurm job a process runs for (tools/cli/job): Slurm's own cgroup
// layout, anchored as Slurm writes it, and the environment only for the
// job's own user's processes in no such cgroup.
#include "fake_node.h"
#include "job/job_of_process.h"
#include "job/slurm_cgroup.h"
#include "job/slurm_ids.h"

#include <catch2/catch.hpp>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;
using namespace std::string_literals;

TEST_CASE("A process's job and step come from Slurm's cgroup, v2 and v1, anchored at the root")
{
    SlurmCgroup v2 =
        slurm_cgroup_of_line("0::/system.slice/slurmstepd.scope/job_41/step_3/user/task_0");
    CHECK(v2.found);
    CHECK(v2.job == "41");
    CHECK(v2.step == "3");
    CHECK(v2.task);
    CHECK(!v2.uid);
    CHECK(slurm_cgroup_of_line("0::/slurmstepd.scope/job_41/step_batch/user/task_0").job == "41");
    CHECK(slurm_cgroup_of_line("0::/system.slice/node7_slurmstepd.scope/job_5/step_0").job == "5");
    // slurmstepd's own cgroup: the job's, but not a task's.
    CHECK(!slurm_cgroup_of_line("0::/system.slice/slurmstepd.scope/job_41/step_3/slurm").task);

    SlurmCgroup v1 = slurm_cgroup_of_line("4:freezer:/slurm/uid_1000/job_7/step_batch/task_0");
    CHECK(v1.job == "7");
    CHECK(v1.step == "batch");
    REQUIRE(v1.uid);
    CHECK(*v1.uid == 1000);
    CHECK(slurm_cgroup_of_line("3:cpu,cpuacct:/slurm/uid_1000/job_7/step_extern").step == "extern");
    CHECK(slurm_cgroup_of("1:name=systemd:/user.slice\n9:memory:/slurm/uid_1/job_8/step_0\n").job ==
          "8");
}

TEST_CASE("A job_N a user can make is not a job: only Slurm's own cgroups are")
{
    for (const char *line : {
             "0::/user.slice/user-1001.slice/user@1001.service/job_7/step_0",
             "0::/user.slice/user-1001.slice/user@1001.service/system.slice/slurmstepd.scope/"
             "job_7/step_0/user/task_0",
             "0::/user.slice/user-1001.slice/user@1001.service/slurm/uid_1001/job_7/step_0",
             "0::/x/job_7/step_0/task_0",
             "0::/system.slice/job_7/step_0",
             "0::/system.slice/slurmstepd.scope/job_12abc/step_0",
             "0::/system.slice/slurmstepd.scope/job_7/step_x",
             "0:cpu:/system.slice/slurmstepd.scope/job_7/step_0",
             "1:name=systemd:/slurm/uid_1000/job_7/step_0",
             "4:freezer:/user.slice/slurm/uid_1000/job_7/step_0",
             "4:freezer:/slurm/job_7/step_0",
             "no colons",
         })
        CHECK_FALSE(slurm_cgroup_of_line(line).found);
}

TEST_CASE("Step ids are numbers or Slurm's three step words")
{
    for (const char *step : {"0", "12", "batch", "extern", "interactive"})
        CHECK(is_step_id(step));
    for (const char *step : {"", "Batch", "1x", "-1", "batch "})
        CHECK_FALSE(is_step_id(step));
    CHECK(is_job_id("4294967295"));
    CHECK_FALSE(is_job_id("12345678901"));
}

TEST_CASE("SLURM_JOB_ID and SLURM_STEP_ID are read from an environment block")
{
    JobOfProcess of = job_of_environment("HOME=/x\0SLURM_JOB_ID=12\0SLURM_STEP_ID=0\0"s);
    CHECK(of.job == "12");
    CHECK(of.step == "0");
    CHECK(job_of_environment("SLURM_STEP_ID=0\0"s).step.empty()); // no job, no step
    CHECK(job_of_environment("XSLURM_JOB_ID=12\0"s).job.empty());
}

TEST_CASE("The rule: a cgroup's job unless of another uid; the environment only for the job's "
          "user in no Slurm cgroup")
{
    FakeNode node;
    auto process = [&](int pid, const std::string &cgroup, const std::string &environ = "") {
        node.proc_file(pid, "cgroup", cgroup);
        node.proc_file(pid, "environ", environ);
    };
    const std::string task7 = "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n";
    process(1, task7);                                                                   // 1000
    process(2, "0::/system.slice/slurmstepd.scope/job_7/step_0/slurm\n");                // root
    process(3, "0::/user.slice/user-1000.slice/session-1.scope\n", "SLURM_JOB_ID=7\0"s); // 1000
    process(4, "0::/user.slice/user-2000.slice/session-2.scope\n", "SLURM_JOB_ID=7\0"s); // 2000
    process(5, task7, "SLURM_JOB_ID=8\0"s); // the cgroup, not the environment
    process(6, "4:freezer:/slurm/uid_1000/job_9/step_0/task_0\n"); // 2000
    process(7, "4:freezer:/slurm/uid_1000/job_9/step_0/task_0\n"); // 1000
    process(8, "0::/init.scope\n", "SLURM_JOB_ID=11\0"s);          // a job no one tells the user of

    ProcessJobs jobs(node.proc());
    for (auto [pid, uid] : {std::pair{1, 1000u},
                            {2, 0u},
                            {3, 1000u},
                            {4, 2000u},
                            {5, 1000u},
                            {6, 2000u},
                            {7, 1000u},
                            {8, 1000u}})
        jobs.meet(pid, uid);
    REQUIRE(jobs.user_of("7"));
    CHECK(*jobs.user_of("7") == 1000);
    REQUIRE(jobs.user_of("9"));
    CHECK(*jobs.user_of("9") == 1000);
    CHECK(!jobs.user_of("11"));

    CHECK(jobs.job_of(1).job == "7");
    CHECK(jobs.job_of(1).in_slurm_cgroup);
    CHECK(jobs.job_of(2).job.empty()); // slurmstepd: root, not the job's user
    CHECK(jobs.job_of(2).in_slurm_cgroup);
    CHECK(jobs.job_of(3).job == "7");  // the job's user, in no Slurm cgroup
    CHECK(jobs.job_of(4).job.empty()); // another user naming job 7
    CHECK(jobs.job_of(5).job == "7");
    CHECK(jobs.job_of(6).job.empty()); // v1: uid_1000 is not its uid
    CHECK(jobs.job_of(7).job == "9");
    CHECK(jobs.job_of(8).job.empty());
    CHECK(jobs.job_of(99).job.empty()); // never met

    // Slurm's word for the job's user wins.
    ProcessJobs named(node.proc());
    named.name_user("11", 1000);
    named.meet(8, 1000);
    named.meet(4, 2000);
    CHECK(named.job_of(8).job == "11");
    named.name_user("7", 2000);
    CHECK(named.job_of(4).job == "7");
    // Under v1 the path names the user: a process of another uid is not
    // the job's, whoever is named as its user.
    named.name_user("9", 2000);
    named.meet(6, 2000);
    CHECK(named.job_of(6).job.empty());
}

TEST_CASE("A process whose fds were not read may be a job's only by the same rule")
{
    const JobOfProcess in_cgroup{"7", "0", true};
    const JobOfProcess none{"", "", false};
    const JobOfProcess refused{"", "", true};
    CHECK(may_be_of_job(in_cgroup, 1000, "7", "0", 1000u));
    CHECK(may_be_of_job(in_cgroup, 1000, "7", "", std::nullopt));
    CHECK_FALSE(may_be_of_job(in_cgroup, 1000, "7", "1", 1000u));
    CHECK_FALSE(may_be_of_job(in_cgroup, 1000, "8", "", 1000u));
    CHECK(may_be_of_job(none, 1000, "7", "0", 1000u)); // its environment is its user's
    CHECK_FALSE(may_be_of_job(none, 2000, "7", "0", 1000u));
    CHECK_FALSE(may_be_of_job(none, 1000, "7", "0", std::nullopt));
    CHECK_FALSE(may_be_of_job(refused, 1000, "7", "0", 1000u));
}
