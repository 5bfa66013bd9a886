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
//                   must let users make their folder (mode 1777, like /tmp)
//                   and be the same path on every node and where srun runs
//   library=PATH    the shim (default: the installed libgdrhook.so)
//   gdrhook=PATH    the gdrhook tool (default: the installed one)
//   proc=DIR sys=DIR  where `gdrhook epilog` reads /proc and /sys (tests)
#include "cache/base/safe_file.h"
#include "tools/cli/job/slurm_ids.h"

// spank.h declares the slurm_spank_* functions outside its extern "C".
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

// What Slurm's loader looks for, by these C names (the slurm_spank_*
// functions below too).
extern "C" {
extern const char plugin_name[], plugin_type[];
extern const unsigned int plugin_version, spank_plugin_version;
SPANK_PLUGIN(gdrhook, 1);
}

using gdrhook::OpenedFile;
using gdrhook::Owner;

#ifndef GDRHOOK_SPANK_LIBRARY
#define GDRHOOK_SPANK_LIBRARY "/usr/lib/libgdrhook.so"
#endif
#ifndef GDRHOOK_SPANK_TOOL
#define GDRHOOK_SPANK_TOOL "/usr/bin/gdrhook"
#endif

namespace {

struct Arguments {
    std::string default_mode = "off";
    std::string log_dir = "/var/tmp/gdrhook";
    std::string library = GDRHOOK_SPANK_LIBRARY;
    std::string tool = GDRHOOK_SPANK_TOOL;
    std::string proc_root, sys_root;
} arguments;

// The job's --gdrhook, as its callback saw it: srun's slurm_spank_exit
// may not ask spank_option_getopt.
bool option_given;
std::string option_value;

int option_seen(int, const char *optarg, int)
{
    option_given = true;
    option_value = optarg && *optarg ? optarg : "on";
    return 0;
}

char option_name[] = "gdrhook", option_arginfo[] = "MODE",
     option_usage[] = "run the tasks under gdrhook's shim, logs per job, a verdict at the end: "
                      "MODE on (the default), off, or the shim's GDRHOOK_PIN (alloc, demand)";
spank_option gdrhook_option = {option_name, option_arginfo, option_usage, 2, 0, option_seen};

bool read_arguments(int ac, char **av)
{
    const std::pair<const char *, std::string *> known[] = {
        {"default=", &arguments.default_mode}, {"logdir=", &arguments.log_dir},
        {"library=", &arguments.library},      {"gdrhook=", &arguments.tool},
        {"proc=", &arguments.proc_root},       {"sys=", &arguments.sys_root}};
    for (int i = 0; i < ac; i++) {
        bool found = false;
        for (const auto &[prefix, value] : known)
            if (std::strncmp(av[i], prefix, std::strlen(prefix)) == 0) {
                *value = av[i] + std::strlen(prefix);
                found = true;
            }
        if (!found) {
            slurm_error("gdrhook: plugstack.conf: unknown argument '%s' (known: default= logdir= "
                        "library= gdrhook= proc= sys=)",
                        av[i]);
            return false;
        }
    }
    return true;
}

// The job's mode: its --gdrhook, else the site's default.
std::string job_mode(spank_t sp)
{
    char *optarg = nullptr;
    if (option_given)
        return option_value;
    if (spank_option_getopt(sp, &gdrhook_option, &optarg) == ESPANK_SUCCESS)
        return optarg && *optarg ? optarg : "on";
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
    names.folder = arguments.log_dir + "/" + names.user + "/" + names.job;
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

// LOGDIR/USER/JOBID made, or found, as folders of the job's user (this
// runs with the user's ids): a link or another user's folder is refused.
std::string make_job_folder(const JobNames &names, uid_t uid)
{
    OpenedFile root = gdrhook::open_folder(AT_FDCWD, arguments.log_dir.c_str(),
                                           gdrhook::FolderName::named_by_user);
    if (root.fd < 0)
        return arguments.log_dir + " " + root.why;
    OpenedFile user = gdrhook::make_folder(root.fd, names.user.c_str(), 0755, Owner::is(uid));
    close(root.fd);
    if (user.fd < 0)
        return arguments.log_dir + "/" + names.user + " " + user.why;
    OpenedFile job = gdrhook::make_folder(user.fd, names.job.c_str(), 0755, Owner::is(uid));
    close(user.fd);
    if (job.fd < 0)
        return names.folder + " " + job.why;
    close(job.fd);
    return {};
}

// Runs `gdrhook epilog` for this step on this node; its verdict line goes
// to slurmd's log, the summary beside the logs (srun prints it).
void judge_step(spank_t sp)
{
    uid_t uid = 0;
    JobNames names;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || !job_names(sp, uid, names))
        return;
    std::vector<std::string> words = {
        arguments.tool, "epilog",
        "--job",        names.job,
        "--step",       names.step,
        "--uid",        std::to_string(uid),
        "--events",     events_pattern(names),
        "--summary",    names.folder + "/%h.step" + names.step + ".verdict.txt"};
    if (!arguments.proc_root.empty())
        words.insert(words.end(), {"--proc", arguments.proc_root});
    if (!arguments.sys_root.empty())
        words.insert(words.end(), {"--sys", arguments.sys_root});
    std::vector<char *> argv;
    for (std::string &word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    std::string path = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
    char *envp[] = {path.data(), nullptr};

    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        slurm_error("gdrhook: cannot run %s: %s", argv[0], std::strerror(rc));
        return;
    }
    std::string line;
    char buffer[1024];
    ssize_t got;
    while ((got = read(out[0], buffer, sizeof buffer)) > 0 || (got < 0 && errno == EINTR))
        if (got > 0 && line.size() < 4096)
            line.append(buffer, static_cast<size_t>(got));
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    line = line.substr(0, line.find('\n'));
    slurm_info("%s", line.empty() ? "gdrhook: epilog gave no verdict" : line.c_str());
}

// Whether this step's tasks run under gdrhook here (slurmstepd, one per
// step): only then is the step judged at its end.
bool step_set_up;
// Tasks of this step that ended on this node.
uint32_t tasks_ended;

// srun's job and step, known before the step starts (its slurm_spank_exit
// may not ask spank_get_item).
bool local_known;
uint32_t local_job, local_step;

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

// Remote, as the job's user, before the tasks start: the shim preloaded
// ahead of what the tasks preload already, the logs in the job's folder.
int slurm_spank_user_init(spank_t sp, int, char **)
{
    if (!spank_remote(sp) || !enabled(sp))
        return 0;
    JobNames names;
    if (!job_names(sp, geteuid(), names)) {
        slurm_error("gdrhook: cannot name the job's log folder; the job runs without gdrhook");
        return 0;
    }
    if (const std::string why = make_job_folder(names, geteuid()); !why.empty()) {
        slurm_error("gdrhook: %s; the job runs without gdrhook", why.c_str());
        return 0;
    }
    std::string preload = arguments.library;
    char old[4096];
    if (spank_getenv(sp, "LD_PRELOAD", old, sizeof old) == ESPANK_SUCCESS && old[0])
        preload += std::string(":") + old;
    const std::string mode = job_mode(sp);
    if (spank_setenv(sp, "LD_PRELOAD", preload.c_str(), 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, "GDRHOOK_EVENTS", events_pattern(names).c_str(), 1) != ESPANK_SUCCESS ||
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
    return 0;
}

// srun, once the step is over: each node's verdict, from the summaries
// beside the logs, as one line each on srun's standard error (the job's
// output).
int slurm_spank_exit(spank_t sp, int, char **)
{
    JobNames names;
    if (spank_context() != S_CTX_LOCAL || !enabled(sp) || !local_known ||
        !name_job(local_job, local_step, getuid(), names))
        return 0;
    const std::string pattern = names.folder + "/*.step" + names.step + ".verdict.txt";
    glob_t found = {};
    if (glob(pattern.c_str(), 0, nullptr, &found) != 0)
        slurm_spank_log("gdrhook: job %s step %s: no verdict in %s (the step ran without "
                        "gdrhook, or the folder is not the same on every node)",
                        names.job.c_str(), names.step.c_str(), names.folder.c_str());
    for (size_t i = 0; i < found.gl_pathc; i++) {
        std::string text;
        if (gdrhook::read_small_file(found.gl_pathv[i], text, 4096).empty() && !text.empty())
            slurm_spank_log("%s (%s)", text.substr(0, text.find('\n')).c_str(), found.gl_pathv[i]);
    }
    globfree(&found);
    return 0;
}

} // extern "C"
