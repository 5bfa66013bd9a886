// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A driver-API program for tests/hostile/hostile.sh, the kinds of program
// gdrhook must not harm. Nothing of gdrhook in it.
//
//   hostile_program pairs N [gate]
//       N allocations of 4 KiB, each freed at once (2N events). With
//       `gate`, after the first pair it prints "ready" and waits for a line
//       on its standard input (the test fills the disk then).
//   hostile_program closefrom N DIR [FILE [no_unshare]]
//       Allocates 4 buffers of 2 MiB (pinned under GDRHOOK_PIN=alloc), makes
//       N/2 pairs (with FILE: and waits until FILE has something in it, so
//       that whoever writes it has it open), then does what many daemons
//       do: closes every descriptor
//       from 3 up (close_range) and opens 8 files of its own in DIR, the
//       first of them moved (dup3) onto the numbers it held before the
//       close (gdrhook's, which moves its own high), as a program that
//       puts its files at fixed numbers does. Then
//       it frees the 4 buffers, makes N/2 more pairs, and after each writes
//       one line to each of its files. At the end it reads its files back:
//       each must hold exactly its lines and its descriptor must still be
//       open. It also counts the descriptors of its own table that name
//       FILE before the close (log_descriptors_in_reach=K). With
//       no_unshare, unshare(2) is refused first, as a sandbox may. It
//       says whether unshare was allowed at its start (unshare_allowed=B).
//   hostile_program pipe_eof LOG [leader_gone]
//       A pipe made before its first CUDA call; once LOG has something in
//       it, the write end is closed and the read end must read 0 (end of
//       file) at once. With leader_gone, close_range(2) is refused and all
//       of it runs on a second thread after the main one has exited.
//   hostile_program moving N DIR [before|gate]
//       N pairs, changing its folder to DIR (chdir) after the first (with
//       `before`: before its first CUDA call), as programs that settle in a
//       work folder do: a relative GDRHOOK_EVENTS names the folder it
//       started in all the same. With `gate`, after the chdir it prints
//       "ready" and waits for a line on its standard input (to be killed).
//
// Prints `events_made=M` (allocations and frees that succeeded) and, for
// closefrom, `own_files_intact=K/8`. Exit status 0 when the program's own
// work went as it should.
#include "tests/programs/cuda_checks.h"

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

long events_made = 0;

int pair()
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_CU(cuMemFree(p));
    events_made += 2;
    return 0;
}

int pairs(long n, bool gate)
{
    if (!current_primary_context())
        return 1;
    for (long i = 0; i < n; ++i) {
        if (pair())
            return 1;
        if (i == 0 && gate) {
            printf("ready\n");
            fflush(stdout);
            char line[16];
            if (!fgets(line, sizeof line, stdin))
                return 1;
        }
    }
    printf("events_made=%ld\n", events_made);
    return 0;
}

// Every descriptor from 3 up, as closefrom(3) does.
void close_from_3()
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
        return;
#endif
    for (int fd = 3; fd < 65536; ++fd)
        close(fd);
}

constexpr int own_files = 8;

// The numbers open from 3 up (gdrhook's log, journal and pins, here).
std::vector<int> open_descriptors_from_3()
{
    std::vector<int> numbers;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return numbers;
    const int listing = dirfd(dir);
    while (const dirent *entry = readdir(dir)) {
        const int fd = atoi(entry->d_name);
        if (fd >= 3 && fd != listing)
            numbers.push_back(fd);
    }
    closedir(dir);
    return numbers;
}

// How many of `numbers` name the file at `path` (readlink of /proc/self/fd).
int naming(const std::vector<int> &numbers, const char *path)
{
    char real[PATH_MAX];
    if (!path || !realpath(path, real))
        return 0;
    int found = 0;
    for (int fd : numbers) {
        char target[PATH_MAX];
        const std::string link = "/proc/self/fd/" + std::to_string(fd);
        const ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
        if (length > 0) {
            target[length] = '\0';
            found += strcmp(target, real) == 0;
        }
    }
    return found;
}

std::string expected_line(int file, long round)
{
    return "file " + std::to_string(file) + " round " + std::to_string(round) + "\n";
}

// Until `path` has something in it (at most 10 s).
void wait_for_content(const char *path)
{
    struct stat st;
    for (int i = 0; i < 1000 && (stat(path, &st) != 0 || st.st_size == 0); ++i)
        usleep(10000);
}

// As a sandbox may: system call `number` fails with `error` from here on.
bool refuse_syscall(unsigned number, unsigned error)
{
    sock_filter program[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, number, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | error),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog filter = {static_cast<unsigned short>(sizeof program / sizeof program[0]), program};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

// Whether this process may unshare its descriptor table (a sandbox may
// refuse): tried in a child, which exits with the answer.
bool unshare_allowed()
{
    const pid_t child = fork();
    if (child == 0)
        _exit(unshare(CLONE_FILES) == 0 ? 0 : 1);
    int status = 0;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

int closefrom(long n, const char *dir, const char *wait_for, bool unshare_refused)
{
    printf("unshare_allowed=%d\n", unshare_allowed() ? 1 : 0);
    // gdrhook then gets no descriptor table of its own
    // (cache/base/private_files.h).
    if (unshare_refused && !refuse_syscall(__NR_unshare, EPERM)) {
        fprintf(stderr, "hostile_program: cannot refuse unshare: %s\n", strerror(errno));
        return 1;
    }
    if (!current_primary_context())
        return 1;
    CUdeviceptr big[4];
    for (CUdeviceptr &p : big) {
        CHECK_CU(cuMemAlloc(&p, 2 << 20));
        ++events_made;
    }
    for (long i = 0; i < n / 2; ++i)
        if (pair())
            return 1;

    if (wait_for)
        wait_for_content(wait_for);
    const std::vector<int> held = open_descriptors_from_3();
    // The log's own descriptor among the program's: one it could close,
    // and whose number it could give a file of its own.
    const int log_descriptors = naming(held, wait_for);
    close_from_3();
    int fds[own_files];
    std::string expected[own_files];
    for (int f = 0; f < own_files; ++f) {
        const std::string path = std::string(dir) + "/own." + std::to_string(f);
        fds[f] = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fds[f] < 0) {
            fprintf(stderr, "hostile_program: cannot open %s: %s\n", path.c_str(), strerror(errno));
            return 1;
        }
        // Onto a number held before, at once: no file of its own sits there.
        const size_t at = static_cast<size_t>(f);
        if (at < held.size() && held[at] != fds[f]) {
            if (dup3(fds[f], held[at], O_CLOEXEC) < 0) {
                fprintf(stderr, "hostile_program: dup3 onto %d: %s\n", held[at], strerror(errno));
                return 1;
            }
            close(fds[f]);
            fds[f] = held[at];
        }
    }
    for (CUdeviceptr p : big) {
        CHECK_CU(cuMemFree(p));
        ++events_made;
    }
    for (long round = 0; round < n - n / 2; ++round) {
        if (pair())
            return 1;
        for (int f = 0; f < own_files; ++f) {
            const std::string line = expected_line(f, round);
            if (write(fds[f], line.data(), line.size()) == static_cast<ssize_t>(line.size()))
                expected[f] += line;
        }
    }

    int intact = 0;
    for (int f = 0; f < own_files; ++f) {
        const off_t size = lseek(fds[f], 0, SEEK_END);
        std::string content(size > 0 ? static_cast<size_t>(size) : 0, '\0');
        const bool read_back =
            size >= 0 && pread(fds[f], content.data(), content.size(), 0) == size;
        if (read_back && content == expected[f] && expected[f].size() > 0)
            ++intact;
        else
            fprintf(stderr, "hostile_program: own.%d: %s\n", f,
                    read_back ? "content differs" : strerror(errno));
    }
    printf("events_made=%ld\nown_files_intact=%d/%d\nlog_descriptors_in_reach=%d\n", events_made,
           intact, own_files, log_descriptors);
    return intact == own_files ? 0 : 1;
}

// A pipe made before the first CUDA call, its write end closed once the
// shim writes its log (so its threads run): the read end must see the end
// of the file at once. A copy of the write end kept anywhere in the
// process, as a descriptor table unshared without closing its copies would
// keep, leaves the read waiting (ended by an alarm after 10 s).
int pipe_eof(const char *log)
{
    int ends[2];
    if (pipe(ends) != 0 || !current_primary_context() || pair())
        return 1;
    wait_for_content(log);
    close(ends[1]);
    alarm(10);
    char byte;
    const ssize_t got = read(ends[0], &byte, 1);
    printf("read after its writer closed: %zd\n", got);
    return got == 0 ? 0 : 1;
}

// The same where close_range(2) is refused (ENOSYS, as before Linux 5.9 or
// under an older sandbox) and the main thread has exited: the copies are
// then found by listing the table, which must be the closing thread's own,
// not the thread group leader's (/proc/self/fd, gone with it).
int pipe_eof_leader_gone(const char *log)
{
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
    if (!refuse_syscall(__NR_close_range, ENOSYS))
        return 1;
    static const char *log_path;
    log_path = log;
    pthread_t thread;
    if (pthread_create(
            &thread, nullptr, [](void *) -> void * { exit(pipe_eof(log_path)); }, nullptr) != 0)
        return 1;
    pthread_exit(nullptr);
}

int moving(long n, const char *dir, const char *how)
{
    const bool before = how && strcmp(how, "before") == 0;
    if (before && chdir(dir) != 0)
        return 1;
    if (!current_primary_context() || pair())
        return 1;
    if (!before && chdir(dir) != 0)
        return 1;
    if (how && strcmp(how, "gate") == 0) {
        printf("ready\n");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    for (long i = 1; i < n; ++i)
        if (pair())
            return 1;
    printf("events_made=%ld\n", events_made);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "pairs") == 0)
        return pairs(atol(argv[2]), argc >= 4);
    if (argc >= 4 && strcmp(argv[1], "closefrom") == 0)
        return closefrom(atol(argv[2]), argv[3], argc >= 5 ? argv[4] : nullptr,
                         argc >= 6 && strcmp(argv[5], "no_unshare") == 0);
    if (argc >= 3 && strcmp(argv[1], "pipe_eof") == 0)
        return argc >= 4 && strcmp(argv[3], "leader_gone") == 0 ? pipe_eof_leader_gone(argv[2])
                                                                : pipe_eof(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "moving") == 0)
        return moving(atol(argv[2]), argv[3], argc >= 5 ? argv[4] : nullptr);
    fprintf(stderr, "usage: hostile_program pairs N [gate] | closefrom N DIR [FILE [no_unshare]] | "
                    "moving N DIR "
                    "[before|gate] | pipe_eof LOG [leader_gone]\n");
    return 2;
}
