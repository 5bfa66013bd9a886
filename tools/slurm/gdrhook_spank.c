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
#define _GNU_SOURCE // pipe2
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

SPANK_PLUGIN(gdrhook, 1);

#ifndef GDRHOOK_SPANK_LIBRARY
#define GDRHOOK_SPANK_LIBRARY "/usr/lib/libgdrhook.so"
#endif
#ifndef GDRHOOK_SPANK_TOOL
#define GDRHOOK_SPANK_TOOL "/usr/bin/gdrhook"
#endif

#define PATH_SIZE 4096

static char default_mode[64] = "off";
static char log_dir[PATH_SIZE] = "/var/tmp/gdrhook";
static char library[PATH_SIZE] = GDRHOOK_SPANK_LIBRARY;
static char tool[PATH_SIZE] = GDRHOOK_SPANK_TOOL;
static char proc_root[PATH_SIZE] = "";
static char sys_root[PATH_SIZE] = "";

// Tasks of this step that ended on this node (slurmstepd, one per step).
static uint32_t tasks_ended;

// The job's --gdrhook, as its callback saw it: srun's slurm_spank_exit
// may not ask spank_option_getopt.
static int option_given;
static char option_value[64];

static int option_seen(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (optarg && strlen(optarg) >= sizeof option_value) {
        slurm_error("gdrhook: --gdrhook=%s: too long", optarg);
        return -1;
    }
    option_given = 1;
    snprintf(option_value, sizeof option_value, "%s", optarg && *optarg ? optarg : "on");
    return 0;
}

static struct spank_option gdrhook_option = {
    "gdrhook",
    "MODE",
    "run the tasks under gdrhook's shim, logs per job, a verdict at the end: MODE on (the "
    "default), off, or the shim's GDRHOOK_PIN (alloc, demand)",
    2,
    0,
    option_seen};

static int copy_argument(const char *arg, const char *name, char *into, size_t size)
{
    const size_t length = strlen(name);
    if (strncmp(arg, name, length) != 0 || arg[length] != '=')
        return 0;
    if (strlen(arg + length + 1) >= size) {
        slurm_error("gdrhook: plugstack.conf: %s is too long", name);
        return -1;
    }
    strcpy(into, arg + length + 1);
    return 1;
}

static int read_arguments(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        int found = copy_argument(av[i], "default", default_mode, sizeof default_mode);
        if (!found)
            found = copy_argument(av[i], "logdir", log_dir, sizeof log_dir);
        if (!found)
            found = copy_argument(av[i], "library", library, sizeof library);
        if (!found)
            found = copy_argument(av[i], "gdrhook", tool, sizeof tool);
        if (!found)
            found = copy_argument(av[i], "proc", proc_root, sizeof proc_root);
        if (!found)
            found = copy_argument(av[i], "sys", sys_root, sizeof sys_root);
        if (found < 0)
            return -1;
        if (!found) {
            slurm_error("gdrhook: plugstack.conf: unknown argument '%s' (known: default= logdir= "
                        "library= gdrhook= proc= sys=)",
                        av[i]);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (read_arguments(ac, av) != 0)
        return -1;
    spank_context_t context = spank_context();
    if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE)
        return spank_option_register(sp, &gdrhook_option) == ESPANK_SUCCESS ? 0 : -1;
    return 0;
}

// The job's mode: its --gdrhook, else the site's default.
static const char *job_mode(spank_t sp)
{
    char *optarg = NULL;
    if (option_given)
        return option_value;
    if (spank_option_getopt(sp, &gdrhook_option, &optarg) == ESPANK_SUCCESS)
        return optarg && *optarg ? optarg : "on";
    return default_mode;
}

static int enabled(spank_t sp)
{
    return strcmp(job_mode(sp), "off") != 0;
}

// "batch", "extern", "interactive" or the step's number.
static void step_name(uint32_t step, char *name, size_t size)
{
    if (step == SLURM_BATCH_SCRIPT)
        snprintf(name, size, "batch");
    else if (step == SLURM_EXTERN_CONT)
        snprintf(name, size, "extern");
    else if (step == SLURM_INTERACTIVE_STEP)
        snprintf(name, size, "interactive");
    else
        snprintf(name, size, "%u", step);
}

struct job_names {
    char job[16];
    char step[16];
    char folder[PATH_SIZE]; // LOGDIR/USER/JOBID
};

static int name_job(uint32_t job, uint32_t step, uid_t uid, struct job_names *names)
{
    struct passwd *pw = getpwuid(uid);
    if (!pw)
        return -1;
    snprintf(names->job, sizeof names->job, "%u", job);
    step_name(step, names->step, sizeof names->step);
    int n = snprintf(names->folder, sizeof names->folder, "%s/%s/%u", log_dir, pw->pw_name, job);
    return n > 0 && (size_t)n < sizeof names->folder ? 0 : -1;
}

// Remote (slurmstepd) only: srun asks in slurm_spank_local_user_init.
static int job_names(spank_t sp, uid_t uid, struct job_names *names)
{
    uint32_t job = 0, step = 0;
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
        return -1;
    return name_job(job, step, uid, names);
}

// The events pattern of the step's tasks: the shim fills in the host,
// rank and pid (%h, %r, %p: README, "Settings").
static void events_pattern(const struct job_names *names, char *pattern, size_t size)
{
    snprintf(pattern, size, "%s/%%h.step%s.rank%%r.%%p.jsonl", names->folder, names->step);
}

// A folder of the job's user, made by that user (user_init runs with the
// user's ids): one that is not a folder of the user's is refused.
static int own_folder(const char *path, uid_t uid)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid ? 0 : -1;
}

// Remote, as the job's user, before the tasks start: the shim preloaded
// ahead of what the tasks preload already, the logs in the job's folder.
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp) || !enabled(sp))
        return 0;
    struct job_names names;
    if (job_names(sp, geteuid(), &names) != 0) {
        slurm_error("gdrhook: cannot name the job's log folder; the job runs without gdrhook");
        return 0;
    }
    char user_folder[PATH_SIZE];
    snprintf(user_folder, sizeof user_folder, "%s", names.folder);
    *strrchr(user_folder, '/') = '\0';
    if (own_folder(user_folder, geteuid()) != 0 || own_folder(names.folder, geteuid()) != 0) {
        slurm_error("gdrhook: %s is not a folder of the job's user (%s); the job runs without "
                    "gdrhook",
                    names.folder, strerror(errno));
        return 0;
    }
    char preload[2 * PATH_SIZE], old[PATH_SIZE];
    if (spank_getenv(sp, "LD_PRELOAD", old, sizeof old) == ESPANK_SUCCESS && old[0])
        snprintf(preload, sizeof preload, "%s:%s", library, old);
    else
        snprintf(preload, sizeof preload, "%s", library);
    char pattern[PATH_SIZE + 64];
    events_pattern(&names, pattern, sizeof pattern);
    const char *mode = job_mode(sp);
    if (spank_setenv(sp, "LD_PRELOAD", preload, 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, "GDRHOOK_EVENTS", pattern, 1) != ESPANK_SUCCESS ||
        (strcmp(mode, "on") != 0 && spank_setenv(sp, "GDRHOOK_PIN", mode, 1) != ESPANK_SUCCESS))
        slurm_error("gdrhook: cannot set the job's environment");
    return 0;
}

// Runs `gdrhook epilog` for this step on this node; its verdict line goes
// to slurmd's log, the summary beside the logs (srun prints it).
static void judge_step(spank_t sp)
{
    uid_t uid = 0;
    struct job_names names;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || job_names(sp, uid, &names) != 0)
        return;
    char pattern[PATH_SIZE + 64], summary[PATH_SIZE + 64];
    events_pattern(&names, pattern, sizeof pattern);
    snprintf(summary, sizeof summary, "%s/%%h.step%s.verdict.txt", names.folder, names.step);
    char uid_text[16];
    snprintf(uid_text, sizeof uid_text, "%u", (unsigned)uid);
    char *argv[20];
    int n = 0;
    argv[n++] = tool;
    argv[n++] = "epilog";
    argv[n++] = "--job";
    argv[n++] = names.job;
    argv[n++] = "--step";
    argv[n++] = names.step;
    argv[n++] = "--uid";
    argv[n++] = uid_text;
    argv[n++] = "--events";
    argv[n++] = pattern;
    argv[n++] = "--summary";
    argv[n++] = summary;
    if (proc_root[0]) {
        argv[n++] = "--proc";
        argv[n++] = proc_root;
    }
    if (sys_root[0]) {
        argv[n++] = "--sys";
        argv[n++] = sys_root;
    }
    argv[n] = NULL;
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, tool, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        slurm_error("gdrhook: cannot run %s: %s", tool, strerror(rc));
        return;
    }
    char line[1024] = "";
    size_t used = 0;
    ssize_t got;
    while ((got = read(out[0], line + used, sizeof line - 1 - used)) > 0 ||
           (got < 0 && errno == EINTR))
        used += got > 0 ? (size_t)got : 0;
    line[used] = '\0';
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    line[strcspn(line, "\n")] = '\0';
    slurm_info("%s", line[0] ? line : "gdrhook: epilog gave no verdict");
}

// Remote, root, as each task ends: once the last of this node's ends, and
// before srun hears of it, the step is judged here.
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    uint32_t local_tasks = 0;
    if (!spank_remote(sp) || !enabled(sp) ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS)
        return 0;
    if (++tasks_ended == local_tasks)
        judge_step(sp);
    return 0;
}

// srun's job and step, known before the step starts (its slurm_spank_exit
// may not ask spank_get_item).
static int local_known;
static uint32_t local_job, local_step;

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    local_known = spank_get_item(sp, S_JOB_ID, &local_job) == ESPANK_SUCCESS &&
                  spank_get_item(sp, S_JOB_STEPID, &local_step) == ESPANK_SUCCESS;
    return 0;
}

// srun, once the step is over: each node's verdict, from the summaries
// beside the logs, as one line each on srun's standard error (the job's
// output).
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_LOCAL || !enabled(sp) || !local_known)
        return 0;
    struct job_names names;
    if (name_job(local_job, local_step, getuid(), &names) != 0)
        return 0;
    char pattern[PATH_SIZE + 64];
    snprintf(pattern, sizeof pattern, "%s/*.step%s.verdict.txt", names.folder, names.step);
    glob_t found = {0};
    if (glob(pattern, 0, NULL, &found) != 0) {
        slurm_spank_log("gdrhook: job %s step %s: no verdict in %s (is it the same folder on "
                        "every node?)",
                        names.job, names.step, names.folder);
        globfree(&found);
        return 0;
    }
    for (size_t i = 0; i < found.gl_pathc; i++) {
        FILE *file = fopen(found.gl_pathv[i], "re");
        char line[1024];
        if (file && fgets(line, sizeof line, file)) {
            line[strcspn(line, "\n")] = '\0';
            slurm_spank_log("%s (%s)", line, found.gl_pathv[i]);
        }
        if (file)
            fclose(file);
    }
    globfree(&found);
    return 0;
}
