// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/write_as_user.h"

#include "cache/base/safe_file.h"

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::slurm {

Result<void> replace_as_user(const std::string &path, const std::string &text, uid_t uid, gid_t gid)
{
    const pid_t pid = fork();
    if (pid < 0) {
        const int error = errno;
        return Result<void>::failure(system_failure(error, "cannot fork"),
                                     std::string("cannot fork (") + std::strerror(error) + ")");
    }
    if (pid == 0) {
        const bool became = setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(uid) == 0;
        _exit(became && replace_by_rename(path, text, private_file_mode(path)).ok() ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return {};
    return Result<void>::failure(Status::error(StatusCode::refused, 0, "cannot be written"),
                                 "cannot be written as its user");
}

} // namespace gdrhook::slurm
