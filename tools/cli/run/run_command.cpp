// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "run/run_command.h"

#include "recover/log_recovery.h"

#include "install/library_locator.h"
#include "read/batched_reader.h"
#include "read/events_pattern.h"
#include "read/every_event.h"
#include "read/malformed_line_report.h"
#include "report/check.h"
#include "report/summary.h"
#include "report/units.h"
#include "run/program_lookup.h"
#include "terminal/terminal_text.h"

#include "cache/base/path_pattern.h"

#include <glob.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <ostream>
#include <set>
#include <sstream>

extern char **environ;

namespace gdrhook::cli {

namespace {

void set_variable(std::vector<std::string> &env, const std::string &name, const std::string &value)
{
    std::string prefix = name + "=";
    for (std::string &entry : env) {
        if (entry.compare(0, prefix.size(), prefix) == 0) {
            entry = prefix + value;
            return;
        }
    }
    env.push_back(prefix + value);
}

std::string get_variable(const std::vector<std::string> &env, const std::string &name)
{
    std::string prefix = name + "=";
    for (const std::string &entry : env)
        if (entry.compare(0, prefix.size(), prefix) == 0)
            return entry.substr(prefix.size());
    return {};
}

int64_t realtime_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Signals as env and timeout treat them: the program starts
// with the dispositions gdrhook run inherited (nohup's SIGHUP, a
// background job's SIGINT and SIGQUIT stay ignored) and the signal mask
// it inherited. What gdrhook run does for itself: it ignores the
// terminal's SIGINT and SIGQUIT (the program, in the same foreground
// group, gets them itself) so that it lives to print the summary, and
// passes a SIGTERM or SIGHUP sent to it alone on to the program, unless
// it inherited them ignored. SIGCHLD is set to its default, for gdrhook
// run and so for the program (as under timeout): ignored, the kernel
// would reap the program and its status would be lost.
volatile sig_atomic_t child_pid = 0;

void forward_signal(int signal)
{
    if (child_pid > 0)
        kill(static_cast<pid_t>(child_pid), signal);
}

bool inherited_ignored(int signal)
{
    struct sigaction now = {};
    return sigaction(signal, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
}

class SignalGuard {
public:
    // Blocks what it catches until forward_from() knows the program: a
    // SIGTERM that arrives while posix_spawn starts it waits, and is then
    // passed on, not lost.
    SignalGuard()
    {
        sigset_t caught;
        sigemptyset(&caught);
        for (int signal : {SIGINT, SIGQUIT, SIGTERM, SIGHUP})
            sigaddset(&caught, signal);
        sigprocmask(SIG_BLOCK, &caught, &inherited_mask_);
        sigemptyset(&child_defaults_);
        struct sigaction ignore = {}, forward = {}, fallback = {};
        ignore.sa_handler = SIG_IGN;
        forward.sa_handler = forward_signal;
        sigemptyset(&forward.sa_mask);
        fallback.sa_handler = SIG_DFL;
        sigaction(SIGCHLD, &fallback, &old_[0]);
        sigaddset(&child_defaults_, SIGCHLD);
        int i = 1;
        for (int signal : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) {
            sigaction(signal, nullptr, &old_[i++]);
            if (inherited_ignored(signal))
                continue; // the program inherits it ignored, as it came
            sigaction(signal, signal == SIGINT || signal == SIGQUIT ? &ignore : &forward, nullptr);
            sigaddset(&child_defaults_, signal);
        }
    }
    ~SignalGuard()
    {
        int i = 0;
        for (int signal : {SIGCHLD, SIGINT, SIGQUIT, SIGTERM, SIGHUP})
            sigaction(signal, &old_[i++], nullptr);
        sigprocmask(SIG_SETMASK, &inherited_mask_, nullptr);
    }
    SignalGuard(const SignalGuard &) = delete;
    SignalGuard &operator=(const SignalGuard &) = delete;

    // What the program starts with: default for what gdrhook run changed,
    // the mask gdrhook run inherited.
    void set_up_child(posix_spawnattr_t &attr) const
    {
        posix_spawnattr_setsigdefault(&attr, &child_defaults_);
        posix_spawnattr_setsigmask(&attr, &inherited_mask_);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    }
    // From now on what arrives (and what waited) goes to `pid`.
    void forward_from(pid_t pid)
    {
        child_pid = pid;
        sigprocmask(SIG_SETMASK, &inherited_mask_, nullptr);
    }

private:
    sigset_t inherited_mask_ = {}, child_defaults_ = {};
    struct sigaction old_[5] = {};
};

// The name `gdrhook run` gives its program's logs: `gdrhook-<pid>.%p.jsonl`
// in the current folder, unless some file there already starts so (in a
// shared folder, another user may plant links at the names it would
// pick): then a random part is added, and that is said.
std::string default_events_pattern(std::ostream &err)
{
    const std::string plain = "gdrhook-" + std::to_string(getpid());
    std::string base = plain;
    for (int attempt = 0; attempt < 8; ++attempt) {
        glob_t found = {};
        const bool taken =
            glob((base + ".*").c_str(), GLOB_NOSORT | GLOB_PERIOD, nullptr, &found) == 0;
        globfree(&found);
        if (!taken)
            break;
        uint32_t random = 0;
        if (getrandom(&random, sizeof random, 0) != sizeof random)
            random = static_cast<uint32_t>(realtime_ns());
        char suffix[16];
        snprintf(suffix, sizeof suffix, "-%08x", random);
        base = plain + suffix;
    }
    if (base != plain)
        err << "gdrhook: files named " << plain
            << ".* are already here, and gdrhook did not make them; "
            << "the events go to " << base << ".%p.jsonl\n";
    return base + ".%p.jsonl";
}

// Of the files a pattern matched, the logs this run's programs wrote: regular
// files of ours, each once (a planted link or a second name of one file
// is no log of theirs).
std::vector<std::string> own_logs(const std::vector<std::string> &files)
{
    std::vector<std::string> logs;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const std::string &file : files) {
        struct stat st;
        if (lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            seen.insert({st.st_dev, st.st_ino}).second)
            logs.push_back(file);
    }
    return logs;
}

void print_run_summary(const std::vector<std::string> &files, int64_t since_ns,
                       const std::string &pattern, size_t unrecovered, std::ostream &err)
{
    if (files.empty()) {
        err << "gdrhook: no event log was written (" << UntrustedText(pattern)
            << "): the program made no CUDA allocation or free call, or the shim was not loaded\n";
        return;
    }
    std::ostringstream malformed_text;
    MalformedLineReport report(malformed_text, files);
    SummaryBuilder summary_builder;
    Checker checker;
    EveryEvent every([&](const LogEvent &event, const SourceLocation &where) {
        summary_builder.add(event, where);
        checker.add(event, where);
    });
    BatchedLogReader reader(files, report, every, 0, every_event_steps);
    reader.set_min_ts(since_ns);
    for (const std::string &message : reader.open())
        err << "gdrhook: " << UntrustedText(message) << '\n';
    reader.run();
    report.finish();
    Summary s = summary_builder.finish(files.size(), reader.bytes_read(), report.total());
    CheckResult check = checker.finish();
    auto count = [&](EventKind kind) {
        const Tally &t = s.by_kind[static_cast<size_t>(kind)];
        return t.count - t.failed;
    };
    err << "gdrhook: " << s.events << " event(s) from " << s.processes << " process(es) in "
        << files.size() << " file(s): " << UntrustedText(pattern) << '\n'
        << "gdrhook:   allocs " << count(EventKind::alloc) << ", frees " << count(EventKind::free)
        << ", pins " << count(EventKind::pin) << ", unpins " << count(EventKind::unpin)
        << ", revocations " << s.by_kind[static_cast<size_t>(EventKind::revoke)].count
        << ", errors " << s.by_kind[static_cast<size_t>(EventKind::error)].count << '\n'
        << "gdrhook:   peak live GPU memory "
        << format_bytes(static_cast<double>(s.peak_live_gpu_bytes)) << ", peak pinned "
        << format_bytes(static_cast<double>(s.peak_pinned_bytes)) << ", still pinned at exit "
        << s.pins_held_at_end << '\n';
    if (s.unpin_delay.count())
        err << "gdrhook:   unpin delay p50 "
            << format_duration_ns(static_cast<double>(s.unpin_delay.percentile(0.5))) << ", p99 "
            << format_duration_ns(static_cast<double>(s.unpin_delay.percentile(0.99))) << '\n';
    if (report.total())
        err << "gdrhook:   " << report.total() << " malformed line(s)\n";
    err << "gdrhook: log check: ";
    if (unrecovered)
        err << unrecovered
            << " journal(s) not recovered, their events missing; see: gdrhook log check\n";
    else if (check.passed())
        err << "OK\n";
    else
        err << check.total_problems << " problem(s); see: gdrhook log check\n";
}

} // namespace

std::vector<std::string> run_environment(const RunOptions &options, const std::string &library,
                                         const std::string &events,
                                         const std::vector<std::string> &base)
{
    std::vector<std::string> env = base;
    std::string preload = get_variable(env, "LD_PRELOAD");
    // Ours first: the shim must see the CUDA calls before any other
    // interposer forwards them.
    set_variable(env, "LD_PRELOAD", preload.empty() ? library : library + ":" + preload);
    set_variable(env, "GDRHOOK_EVENTS", events);
    for (const auto &[variable, value] : options.settings)
        if (!value.empty())
            set_variable(env, variable, value);
    return env;
}

int run_program(const RunOptions &options, std::ostream &err)
{
    std::vector<std::string> tried;
    std::string library = find_shim(options.library, tried);
    if (library.empty()) {
        err << "gdrhook: cannot find libgdrhook.so; looked at:\n";
        for (const std::string &path : tried)
            err << "gdrhook:   " << path << '\n';
        err << "gdrhook: build it (ninja -C BUILD) or name it with --library or GDRHOOK_LIBRARY\n";
        return 127;
    }

    std::string events = options.events;
    if (events.empty())
        events = default_events_pattern(err);

    std::vector<std::string> base;
    for (char **e = environ; *e; ++e)
        base.emplace_back(*e);
    std::vector<std::string> env = run_environment(options, library, events, base);
    std::vector<char *> envp;
    for (std::string &entry : env)
        envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = options.command;
    std::vector<char *> argv;
    for (std::string &arg : args)
        argv.push_back(arg.data());
    argv.push_back(nullptr);

    // posix_spawnp searches our own PATH, which the program inherits.
    const ProgramLookup program = look_up_program(options.command[0], std::getenv("PATH"));
    if (program.exit_status != 0) {
        err << "gdrhook: cannot run '" << terminal_text(options.command[0]) << "': " << program.why
            << '\n';
        return program.exit_status;
    }

    int64_t started_ns = realtime_ns();
    SignalGuard guard;
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    guard.set_up_child(attr);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        err << "gdrhook: cannot run '" << terminal_text(options.command[0])
            << "': " << std::strerror(rc) << '\n';
        return rc == ENOENT ? 127 : 126;
    }
    guard.forward_from(pid);

    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    if (waited != pid) {
        err << "gdrhook: lost the status of '" << terminal_text(options.command[0])
            << "': " << std::strerror(errno) << '\n';
        return 70; // EX_SOFTWARE: never the 0 of a program that may have failed
    }
    int exit_code = 0;
    if (WIFEXITED(status)) {
        exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        exit_code = 128 + WTERMSIG(status);
        err << "gdrhook: '" << terminal_text(options.command[0]) << "' was killed by signal "
            << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")\n";
    }
    // Processes that died without writing their logs left journals
    // (`<log>.<pid>.<ns>.journal`): their events go into the logs first.
    const size_t unrecovered =
        report_recoveries(recover_paths(expand_events_pattern(events + ".%p.%p.journal")), err);
    if (options.summary)
        print_run_summary(own_logs(expand_events_pattern(events)), started_ns, events, unrecovered,
                          err);
    return exit_code;
}

} // namespace gdrhook::cli
