// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "node/node_subcommand.h"

#include "node/node_command.h"

#include <iostream>
#include <memory>

namespace gdrhook::cli {

Command add_node(CLI::App &app)
{
    auto options = std::make_shared<NodeOptions>();
    CLI::App *node = app.add_subcommand(
        "node", "what is pinned on this machine now, by process, user and job: the module's "
                "files and the CUDA driver's dma-bufs (from /proc/*/fdinfo), the module's "
                "counters, BAR1");
    node->add_option("--user", options->user,
                     "only what is charged to this user (name or uid) is judged; with --job, "
                     "the job's user (SLURM_JOB_UID) instead: its processes in no Slurm cgroup "
                     "are the job's by their SLURM_JOB_ID (proctrack/linuxproc)")
        ->type_name("USER");
    node->add_option("--job", options->job,
                     "only what is this Slurm job's is judged, as `gdrhook epilog` charges it: "
                     "its processes by Slurm's cgroups (the job's user from --user, else from "
                     "them), by their environment only where of the job's user")
        ->type_name("JOBID");
    node->add_option("--fd-budget", options->fd_budget,
                     "read at most this many fds in all (the job's processes first); a process "
                     "past it counts as unreadable, never as holding nothing")
        ->capture_default_str();
    node->add_option("-o,--prometheus", options->prometheus,
                     "also write the whole node's figures to FILE as a node-exporter textfile "
                     "(replaced whole); '-': to stdout, instead of the text report")
        ->type_name("FILE");
    node->add_option("--libnvml", options->libnvml, "the NVML library to ask for BAR1")
        ->capture_default_str();
    add_machine_roots(node, options->proc_root, options->sys_root);
    node->footer("Run as root to see every process. Exit status: 0 nothing pinned (of USER "
                 "with --user, of JOBID with --job); 1 something is still pinned, or, for the "
                 "whole node, the module holds pins no readable process accounts for; 2 bad "
                 "arguments or an unwritable --prometheus FILE; 3 nothing found, but processes "
                 "it could not read may hold pins (not root).");
    return {node,
            [options](const CommandLine &) { return run_node(*options, std::cout, std::cerr); }};
}

} // namespace gdrhook::cli
