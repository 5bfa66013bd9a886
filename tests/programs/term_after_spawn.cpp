// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libterm_after_spawn.so: preloaded into `gdrhook run`, it sends the tool
// a SIGTERM the moment posix_spawnp has started the program and before
// posix_spawnp returns, so before gdrhook run can have recorded the
// program's pid. That is the window of issue 39 (item 14) every run: the
// SIGTERM must still reach the program (tests/cli/e2e.sh run_signals).
// Only the first call does it; the program the tool starts inherits the
// preload, and makes no such call.
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern "C" int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                            const posix_spawnattr_t *attributes, char *const argv[],
                            char *const envp[])
{
    using Spawn = int (*)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                          const posix_spawnattr_t *, char *const[], char *const[]);
    static bool sent = false;
    const auto real = reinterpret_cast<Spawn>(dlsym(RTLD_NEXT, "posix_spawnp"));
    const int rc = real(pid, file, actions, attributes, argv, envp);
    if (!sent) {
        sent = true;
        kill(getpid(), SIGTERM);
    }
    return rc;
}
