// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/limited_run.h"

#include "cache/base/unique_fd.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::slurm {
namespace {

int64_t now_ms()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::vector<char *> pointers(std::vector<std::string> &words)
{
    std::vector<char *> result;
    for (std::string &word : words)
        result.push_back(word.data());
    result.push_back(nullptr);
    return result;
}

Result<LimitedRun> not_started(int error, const char *what)
{
    return Result<LimitedRun>::failure(system_failure(error, what), std::strerror(error));
}

// The program and its process group. The group alone can miss it: where
// posix_spawn's child runs beside its parent (qemu-user makes its vfork a
// fork), the child may not have made its group yet when the limit comes.
void kill_program(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

} // namespace

Result<LimitedRun> run_with_limit(const std::vector<std::string> &words,
                                  const std::vector<std::string> &env, int seconds)
{
    LimitedRun result;
    std::vector<std::string> argv_words = words, env_words = env;
    std::vector<char *> argv = pointers(argv_words), envp = pointers(env_words);
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return not_started(errno, "pipe2");
    UniqueFd reader(out[0]), writer(out[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, writer.get(), STDOUT_FILENO);
    // A process group of its own, which the limit kills whole.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    writer.reset();
    if (rc != 0)
        return not_started(rc, "posix_spawn");
    // Woken by its output and by its end (a pidfd polls readable once it
    // has exited); where the kernel has no pidfd, by a tick.
    UniqueFd ended(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    const int64_t deadline = now_ms() + static_cast<int64_t>(seconds) * 1000;
    std::string output;
    int status = 0;
    bool reaped = false;
    int wait_error = 0;
    while (!reaped) {
        const int64_t left = deadline - now_ms();
        if (left <= 0) {
            result.timed_out = true;
            kill_program(pid);
            break;
        }
        pollfd fds[2] = {{reader.get(), POLLIN, 0}, {ended.get(), POLLIN, 0}};
        const int wait_ms = ended.valid() ? static_cast<int>(left) : std::min<int>(left, 100);
        if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) {
            wait_error = errno; // before the kill, whose own failure would overwrite it
            kill_program(pid);  // waited for no more than the limit
            break;
        }
        if (reader.valid() && fds[0].revents) {
            char buffer[1024];
            const ssize_t got = read(reader.get(), buffer, sizeof buffer);
            if (got > 0 && output.size() < 4096)
                output.append(buffer, static_cast<size_t>(got));
            else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
                reader.reset(); // its end: poll skips a negative descriptor
        }
        reaped = waitpid(pid, &status, WNOHANG) == pid;
    }
    if (!reaped)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    result.first_line = output.substr(0, output.find('\n'));
    if (wait_error != 0)
        return Result<LimitedRun>::failure(system_failure(wait_error, "poll"),
                                           std::string("cannot be waited for (") +
                                               std::strerror(wait_error) + ")",
                                           std::move(result));
    return result;
}

} // namespace gdrhook::slurm
