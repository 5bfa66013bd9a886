// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// gdrhook's Slurm SPANK plugin (README, "Slurm"): `srun|sbatch|salloc
// --gdrhook[=MODE]`, or the site's default (plugstack.conf: default=MODE),
// runs the job's tasks under the shim with their logs laid out per job,
// and at the end of each step judges that step alone on each node with
// `gdrhook epilog` (tools/cli/epilog), which checks its logs and charges
// it with what its own processes still hold pinned, never with what
// another job of the same user holds.
//
// MODE: `on`; `off` (no shim); any other word is the job's GDRHOOK_PIN,
// which the shim reads and checks like any setting.
//
// Plugin arguments (plugstack.conf), each optional:
//   default=MODE    for jobs that do not give --gdrhook (default off)
//   logdir=DIR      logs in DIR/USER/JOBID (default /var/tmp/gdrhook); DIR
//                   a folder of root (or owner=), which no one else may
//                   write in unless it is sticky (log_tree.h)
//   owner=USER      who may own DIR besides root
//   group=GROUP     who may read every job's logs (default: only its user)
//   timeout=SECONDS how long a step's `gdrhook epilog` may run (default 60)
//   library=PATH    the shim (default: the installed libgdrhook.so)
//   gdrhook=PATH    the gdrhook tool (default: the installed one)
//   proc=DIR sys=DIR  where `gdrhook epilog` reads /proc and /sys (tests)
#include "cache/base/config.h"
#include "cache/base/path_pattern.h"
#include "tools/cli/job/slurm_ids.h"
#include "tools/cli/terminal/terminal_text.h"
#include "tools/slurm/limited_run.h"
#include "tools/slurm/log_tree.h"
#include "tools/slurm/plugin_arguments.h"
#include "tools/slurm/step_verdicts.h"
#include "tools/slurm/write_as_user.h"

// spank.h declares the slurm_spank_* functions outside its extern "C".
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <pwd.h>
#include <unistd.h>

#include <string>
#include <vector>

// What Slurm's loader looks for, by these C names (the slurm_spank_*
// functions below too).
extern "C" {
extern const char plugin_name[], plugin_type[];
extern const unsigned int plugin_version, spank_plugin_version;
SPANK_PLUGIN(gdrhook, 1);
}

using gdrhook::Result;
using gdrhook::UniqueFd;
using gdrhook::cli::terminal_text;
using namespace gdrhook::slurm;

#ifndef GDRHOOK_SPANK_LIBRARY
#define GDRHOOK_SPANK_LIBRARY "/usr/lib/libgdrhook.so"
#endif
#ifndef GDRHOOK_SPANK_TOOL
#define GDRHOOK_SPANK_TOOL "/usr/bin/gdrhook"
#endif

namespace {

PluginArguments arguments;

// The job's --gdrhook, as its callback saw it: srun's slurm_spank_exit
// may not ask spank_option_getopt.
bool option_given;
std::string option_value;

// Called where the option is given (srun, sbatch, salloc) as much as in
// the job's steps: a misspelt mode is refused there, before anything is
// submitted, with the words the shim's settings table accepts.
int option_seen(int, const char *optarg, int)
{
    const std::string given = optarg && *optarg ? optarg : "on";
    const Result<std::string> mode = check_mode(given);
    if (!mode) {
        slurm_error("gdrhook: --gdrhook=%s %s", terminal_text(given).c_str(), mode.why().c_str());
        return -1;
    }
    option_given = true;
    option_value = *mode;
    return 0;
}

char option_name[] = "gdrhook", option_arginfo[] = "MODE",
     option_usage[] = "run the tasks under gdrhook's shim, logs per job, a verdict at the end: "
                      "MODE on (the default), off, or the shim's GDRHOOK_PIN (alloc, demand)";
spank_option gdrhook_option = {option_name, option_arginfo, option_usage, 2, 0, option_seen};

bool read_arguments(int ac, char **av)
{
    arguments = PluginArguments();
    arguments.library = GDRHOOK_SPANK_LIBRARY;
    arguments.tool = GDRHOOK_SPANK_TOOL;
    if (const Result<void> read = read_plugin_arguments(ac, av, arguments); !read) {
        slurm_error("gdrhook: plugstack.conf: %s", read.why().c_str());
        return false;
    }
    return true;
}

// The job's mode: its --gdrhook, else the site's default.
std::string job_mode(spank_t sp)
{
    char *optarg = nullptr;
    if (option_given)
        return option_value;
    if (spank_option_getopt(sp, &gdrhook_option, &optarg) == ESPANK_SUCCESS) {
        const Result<std::string> mode = check_mode(optarg && *optarg ? optarg : "on");
        return mode ? *mode : "off";
    }
    return arguments.default_mode;
}

bool enabled(spank_t sp)
{
    return job_mode(sp) != "off";
}

// The step's word (tools/cli/job/slurm_ids.h, which `gdrhook epilog`
// reads them by) or its number.
std::string step_name(uint32_t step)
{
    using namespace gdrhook::cli;
    switch (step) {
    case SLURM_BATCH_SCRIPT: return std::string(step_batch);
    case SLURM_EXTERN_CONT: return std::string(step_extern);
    case SLURM_INTERACTIVE_STEP: return std::string(step_interactive);
    default: return std::to_string(step);
    }
}

struct JobNames {
    std::string user, job, step;
    std::string folder; // LOGDIR/USER/JOBID
};

bool name_job(uint32_t job, uint32_t step, uid_t uid, JobNames &names)
{
    const passwd *pw = getpwuid(uid);
    if (!pw)
        return false;
    names.user = pw->pw_name;
    names.job = std::to_string(job);
    names.step = step_name(step);
    names.folder = arguments.log_tree.root + "/" + names.user + "/" + names.job;
    return true;
}

// Remote (slurmstepd) only: srun asks in slurm_spank_local_user_init.
bool job_names(spank_t sp, uid_t uid, JobNames &names)
{
    uint32_t job = 0, step = 0;
    return spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
           spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
           name_job(job, step, uid, names);
}

// The events pattern of the step's tasks: the shim fills in the host,
// rank and pid (%h, %r, %p: README, "Settings").
std::string events_pattern(const JobNames &names)
{
    return names.folder + "/%h.step" + names.step + ".rank%r.%p.jsonl";
}

// Where the shim marks, as the loader maps it in each of the step's
// processes on this node, that it was loaded (cache/core/load_mark.cpp):
// a step that leaves no mark ran without gdrhook, as in a container that
// lacks the shim, and `gdrhook epilog` says so.
std::string load_marks_path(const JobNames &names)
{
    return names.folder + "/" + gdrhook::short_host_name() + ".step" + names.step + ".shim-loaded";
}

// Runs `gdrhook epilog` for this step on this node, for no longer than
// the site's limit; its verdict line goes to slurmd's log, the summary
// beside the logs (srun prints it). A step not judged says so in both.
void judge_step(spank_t sp)
{
    uid_t uid = 0;
    gid_t gid = 0;
    JobNames names;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS || !job_names(sp, uid, names))
        return;
    const std::string summary = names.folder + "/%h.step" + names.step + ".verdict.txt";
    std::vector<std::string> words = {arguments.tool, "epilog",
                                      "--job",        names.job,
                                      "--step",       names.step,
                                      "--uid",        std::to_string(uid),
                                      "--events",     events_pattern(names),
                                      "--summary",    summary,
                                      "--load-marks", load_marks_path(names)};
    if (!arguments.proc_root.empty())
        words.insert(words.end(), {"--proc", arguments.proc_root});
    if (!arguments.sys_root.empty())
        words.insert(words.end(), {"--sys", arguments.sys_root});
    const Result<LimitedRun> run =
        run_with_limit(words, {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, arguments.epilog_seconds);
    if (run && !run->timed_out) {
        slurm_info("%s", run->first_line.empty() ? "gdrhook: epilog gave no verdict"
                                                 : terminal_text(run->first_line).c_str());
        return;
    }
    const std::string host = gdrhook::short_host_name();
    const std::string verdict =
        "gdrhook: job " + names.job + " step " + names.step + " on " + host + ": not judged: " +
        (run->timed_out ? "time limit (" + std::to_string(arguments.epilog_seconds) + " s)"
                        : "cannot run " + arguments.tool + " (" + run.why() + ")");
    slurm_info("%s", terminal_text(verdict).c_str());
    const auto written = replace_as_user(
        names.folder + "/" + host + ".step" + names.step + ".verdict.txt",
        verdict + "\n\nThe epilog (gdrhook epilog) " +
            (run->timed_out ? "was killed at the plugin's time limit (timeout=)" : "did not run") +
            ": what the step left pinned and its logs were not checked.\n",
        uid, gid);
    if (!written)
        slurm_error("gdrhook: %s/%s.step%s.verdict.txt %s", names.folder.c_str(), host.c_str(),
                    names.step.c_str(), written.why().c_str());
}

// Whether this step's tasks run under gdrhook here (slurmstepd, one per
// step): only then is the step judged at its end.
bool step_set_up;
// Set where the log tree was refused for this step, which slurmd's log
// has said once: the step runs without gdrhook.
bool step_refused;
// Tasks of this step that ended on this node.
uint32_t tasks_ended;

// srun's job and step, known before the step starts (its slurm_spank_exit
// may not ask spank_get_item).
bool local_known;
uint32_t local_job, local_step;
uint32_t local_nodes; // the step's nodes, 0 where srun could not tell

} // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (!read_arguments(ac, av))
        return -1;
    const spank_context_t context = spank_context();
    if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE)
        return spank_option_register(sp, &gdrhook_option) == ESPANK_SUCCESS ? 0 : -1;
    return 0;
}

// Remote, as root, before privileges are dropped: the user's folder in
// the log root, made for the user, or the one there checked to be theirs.
int slurm_spank_init_post_opt(spank_t sp, int, char **)
{
    uid_t uid = 0;
    gid_t gid = 0;
    JobNames names;
    if (!spank_remote(sp) || !enabled(sp))
        return 0;
    step_refused = true;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS || !job_names(sp, uid, names)) {
        slurm_error("gdrhook: cannot name the job's log folder; the job runs without gdrhook");
        return 0;
    }
    if (const auto prepared = prepare_user_folder(arguments.log_tree, names.user, uid, gid);
        !prepared) {
        slurm_error("gdrhook: %s; the job runs without gdrhook", prepared.why().c_str());
        return 0;
    }
    step_refused = false;
    return 0;
}

// Remote, as the job's user, before the tasks start: the shim preloaded
// ahead of what the tasks preload already, the logs in the job's folder.
int slurm_spank_user_init(spank_t sp, int, char **)
{
    if (!spank_remote(sp) || !enabled(sp) || step_refused)
        return 0;
    JobNames names;
    if (!job_names(sp, geteuid(), names)) {
        slurm_error("gdrhook: cannot name the job's log folder; the job runs without gdrhook");
        return 0;
    }
    if (const auto made = make_job_folder(arguments.log_tree, names.user, names.job, geteuid());
        !made) {
        slurm_error("gdrhook: %s; the job runs without gdrhook", made.why().c_str());
        return 0;
    }
    std::string preload = arguments.library;
    char old[4096];
    if (spank_getenv(sp, "LD_PRELOAD", old, sizeof old) == ESPANK_SUCCESS && old[0])
        preload += std::string(":") + old;
    const std::string mode = job_mode(sp);
    if (spank_setenv(sp, "LD_PRELOAD", preload.c_str(), 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, "GDRHOOK_EVENTS", events_pattern(names).c_str(), 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, gdrhook::load_marks_variable, load_marks_path(names).c_str(), 1) !=
            ESPANK_SUCCESS ||
        (mode != "on" && spank_setenv(sp, "GDRHOOK_PIN", mode.c_str(), 1) != ESPANK_SUCCESS))
        slurm_error("gdrhook: cannot set the job's environment");
    else
        step_set_up = true;
    return 0;
}

// Remote, root, as each task ends: once the last of this node's ends, and
// before srun hears of it, the step is judged here.
int slurm_spank_task_exit(spank_t sp, int, char **)
{
    uint32_t local_tasks = 0;
    if (!spank_remote(sp) || !step_set_up ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS)
        return 0;
    if (++tasks_ended == local_tasks)
        judge_step(sp);
    return 0;
}

int slurm_spank_local_user_init(spank_t sp, int, char **)
{
    local_known = spank_get_item(sp, S_JOB_ID, &local_job) == ESPANK_SUCCESS &&
                  spank_get_item(sp, S_JOB_STEPID, &local_step) == ESPANK_SUCCESS;
    if (spank_get_item(sp, S_JOB_NNODES, &local_nodes) != ESPANK_SUCCESS)
        local_nodes = 0;
    return 0;
}

// srun, once the step is over: each node's verdict, from the summaries
// beside the logs, as one line each on srun's standard error (the job's
// output); or, plainly, that the step ran without gdrhook.
int slurm_spank_exit(spank_t sp, int, char **)
{
    JobNames names;
    if (spank_context() != S_CTX_LOCAL || !enabled(sp) || !local_known ||
        !name_job(local_job, local_step, getuid(), names))
        return 0;
    const Result<UniqueFd> folder =
        open_job_folder(arguments.log_tree, names.user, names.job, getuid());
    if (!folder) {
        slurm_spank_log("gdrhook: job %s step %s ran without gdrhook: %s", names.job.c_str(),
                        names.step.c_str(), terminal_text(folder.why()).c_str());
        return 0;
    }
    StepVerdicts verdicts;
    if (folder->valid())
        verdicts = step_verdicts(folder->get(), names.folder, names.job, names.step);
    for (const std::string &line : verdicts.lines)
        slurm_spank_log("%s", line.c_str());
    // A node's verdict is written on that node: under a log root of each
    // node's own (the default, /var/tmp/gdrhook), srun reads only the
    // nodes' that share its file system, and says where the others are.
    if (verdicts.nodes == 0 || verdicts.nodes < local_nodes) {
        const std::string count = local_nodes
                                      ? std::to_string(local_nodes - verdicts.nodes) + " of " +
                                            std::to_string(local_nodes) + " node(s)"
                                      : std::string("its nodes");
        slurm_spank_log("gdrhook: job %s step %s: no verdict here of %s: each is on its node, in "
                        "%s/NODE.step%s.verdict.txt, and in its slurmd log (a logdir= each node "
                        "has of its own; one shared with this host brings them here)",
                        names.job.c_str(), names.step.c_str(), count.c_str(),
                        terminal_text(names.folder).c_str(), names.step.c_str());
    }
    return 0;
}

} // extern "C"
