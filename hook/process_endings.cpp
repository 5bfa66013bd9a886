// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The calls that end or replace the process without running exit handlers:
// _exit, _Exit, quick_exit and the exec family. Each writes what the shim
// recorded (cache/core/runtime.h, finish_before_process_ends()) and then
// makes the program's call unchanged, through the next definition.
#include "cache/core/runtime.h"
#include "hook/real_functions.h"

#include <alloca.h>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrhook {
namespace {

template <typename F> F next_definition(const char *name)
{
    DlsymFunction lookup = real_dlsym();
    return lookup ? reinterpret_cast<F>(lookup(RTLD_NEXT, name)) : nullptr;
}

// execl, execlp and execle take their arguments as a list ending in a
// null pointer; the v forms take the same as an array, built on the stack:
// a vfork()ed child must not allocate.
size_t argument_count(const char *first, va_list list)
{
    size_t count = 1;
    for (const char *arg = first; arg; arg = va_arg(list, const char *))
        ++count;
    return count; // with the null pointer
}

void fill_arguments(char **argv, const char *first, va_list &list)
{
    size_t i = 0;
    argv[i] = const_cast<char *>(first);
    while (argv[i])
        argv[++i] = va_arg(list, char *);
}

#define GDRHOOK_ARGUMENT_ARRAY(argv, first)                                                        \
    va_list list;                                                                                  \
    va_start(list, first);                                                                         \
    va_list counting;                                                                              \
    va_copy(counting, list);                                                                       \
    char **argv = static_cast<char **>(alloca(argument_count(first, counting) * sizeof(char *)));  \
    va_end(counting);                                                                              \
    fill_arguments(argv, first, list)

} // namespace
} // namespace gdrhook

using namespace gdrhook;

#define GDRHOOK_ENDING extern "C" __attribute__((visibility("default")))

GDRHOOK_ENDING void _exit(int status)
{
    finish_before_process_ends(ProcessEnd::now);
    if (auto real = next_definition<void (*)(int)>("_exit"))
        real(status);
    syscall(SYS_exit_group, status); // no libc after us: end all the same
    __builtin_unreachable();
}

GDRHOOK_ENDING void _Exit(int status)
{
    finish_before_process_ends(ProcessEnd::now);
    if (auto real = next_definition<void (*)(int)>("_Exit"))
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

GDRHOOK_ENDING void quick_exit(int status)
{
    // Before the at_quick_exit handlers: they may free CUDA memory, whose
    // events are then written by their producers (the worker has stopped).
    finish_before_process_ends(ProcessEnd::after_handlers);
    if (auto real = next_definition<void (*)(int)>("quick_exit"))
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

namespace {

// An exec that fails returns, and the program goes on: then the shim's
// worker has stopped and producers write their own events.
template <typename Exec, typename... Args> int exec_through_next(const char *name, Args... args)
{
    finish_before_process_ends(ProcessEnd::exec);
    auto real = next_definition<Exec>(name);
    int rc = -1;
    if (real) {
        rc = real(args...);
    } else {
        errno = ENOSYS; // no libc after us
    }
    const int saved = errno;
    process_goes_on_after_failed_exec();
    errno = saved;
    return rc;
}

using ExecPath = int (*)(const char *, char *const[]);
using ExecPathEnv = int (*)(const char *, char *const[], char *const[]);
using ExecFdEnv = int (*)(int, char *const[], char *const[]);

} // namespace

GDRHOOK_ENDING int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_through_next<ExecPathEnv>("execve", path, argv, envp);
}

GDRHOOK_ENDING int execv(const char *path, char *const argv[])
{
    return exec_through_next<ExecPath>("execv", path, argv);
}

GDRHOOK_ENDING int execvp(const char *file, char *const argv[])
{
    return exec_through_next<ExecPath>("execvp", file, argv);
}

GDRHOOK_ENDING int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_through_next<ExecPathEnv>("execvpe", file, argv, envp);
}

GDRHOOK_ENDING int fexecve(int fd, char *const argv[], char *const envp[])
{
    return exec_through_next<ExecFdEnv>("fexecve", fd, argv, envp);
}

GDRHOOK_ENDING int execl(const char *path, const char *arg, ...)
{
    GDRHOOK_ARGUMENT_ARRAY(argv, arg);
    va_end(list);
    return execv(path, argv);
}

GDRHOOK_ENDING int execlp(const char *file, const char *arg, ...)
{
    GDRHOOK_ARGUMENT_ARRAY(argv, arg);
    va_end(list);
    return execvp(file, argv);
}

GDRHOOK_ENDING int execle(const char *path, const char *arg, ...)
{
    GDRHOOK_ARGUMENT_ARRAY(argv, arg);
    char *const *envp = va_arg(list, char *const *);
    va_end(list);
    return execve(path, argv, envp);
}
