// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "epilog/epilog_subcommand.h"

#include "epilog/epilog_command.h"

#include <iostream>
#include <memory>

namespace gdrhook::cli {

Command add_epilog(CLI::App &app)
{
    auto options = std::make_shared<EpilogOptions>();
    CLI::App *epilog = app.add_subcommand(
        "epilog", "one job's verdict at its end, on this node: its event logs checked and what "
                  "its processes still hold pinned, charged by job, never by user (Slurm)");
    epilog->add_option("--job", options->job, "the Slurm job id")->required();
    epilog->add_option("--step", options->step, "only this step of the job");
    epilog->add_option("--uid", options->uid,
                       "the job's user (else the one its Slurm cgroups show): a process of "
                       "another uid is never the job's, and one in no Slurm cgroup is the job's "
                       "by its SLURM_JOB_ID only if of this uid; run as root, the logs are read "
                       "and the summary written as this user alone");
    epilog->add_option("--events", options->events,
                       "the job's GDRHOOK_EVENTS pattern: this host's logs are checked");
    epilog->add_option("--summary", options->summary,
                       "also write the verdict and its details to FILE (%h: this host)");
    epilog->add_option("--load-marks", options->load_marks,
                       "the file where the shim marks each process that loaded it "
                       "(GDRHOOK_LOAD_MARKS): a step whose processes did not ran without "
                       "gdrhook, which the verdict says (never OK)");
    epilog
        ->add_option("--fd-budget", options->fd_budget,
                     "read at most this many fds in all (the job's processes first); a process "
                     "past it counts as unreadable, never as holding nothing")
        ->capture_default_str();
    add_machine_roots(epilog, options->proc_root, options->sys_root);
    epilog->footer(
        "Run as root. Exit status: 0 the job left nothing pinned here and its logs "
        "pass; 1 it left pins, its logs have problems, a process could not be "
        "read, or it ran without gdrhook; 2 bad arguments or an unwritable --summary FILE.");
    return {epilog,
            [options](const CommandLine &) { return run_epilog(*options, std::cout, std::cerr); }};
}

} // namespace gdrhook::cli
