// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "tools/slurm/log_tree.h"

#include "cache/base/unique_fd.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::slurm {
namespace {

OpenedFile refused(std::string why)
{
    return OpenedFile::failure(Status::error(StatusCode::refused, 0, "refused"), std::move(why));
}

Result<void> refusal(std::string why)
{
    return Result<void>::failure(Status::error(StatusCode::refused, 0, "refused"), std::move(why));
}

std::string user_name(uid_t uid)
{
    const passwd *pw = getpwuid(uid);
    return pw ? pw->pw_name : "uid " + std::to_string(uid);
}

std::string mode_text(mode_t mode)
{
    char text[8];
    snprintf(text, sizeof text, "%o", static_cast<unsigned>(mode & 07777));
    return text;
}

// A user's folder: theirs alone, or their logs readable by the site's
// group, which each file made in it takes (set-group-ID).
mode_t user_folder_mode(const LogTreeRules &rules)
{
    return rules.has_readers ? S_ISGID | 0750 : 0700;
}

mode_t job_folder_mode(const LogTreeRules &rules)
{
    return rules.has_readers ? 0750 : 0700;
}

// The reason of a refused `folder`, named `shown`. O_NOFOLLOW with
// O_DIRECTORY fails a link as not a folder: a second look at what was
// refused says which.
OpenedFile explained(OpenedFile folder, int dir, const std::string &name, const std::string &shown)
{
    if (folder)
        return folder;
    struct stat st;
    if (folder.system_error() == ENOTDIR &&
        fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        return OpenedFile::failure(
            folder.status(),
            shown + " " + (S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a folder"));
    return OpenedFile::failure(folder.status(), shown + " " + folder.why());
}

// The folder `name` in the one open at `dir`, never through a link at its
// name; `shown` names it in the reason.
OpenedFile open_tree_folder(int dir, const std::string &name, const std::string &shown)
{
    return explained(open_folder(dir, name.c_str(), FolderName::fixed), dir, name, shown);
}

OpenedFile open_user_folder(const LogTreeRules &rules, int root, const std::string &user)
{
    return open_tree_folder(root, user, rules.root + "/" + user);
}

// Refuses a folder open at `fd` that `uid` does not own.
Result<void> owned_by(int fd, uid_t uid, const std::string &name)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return refusal(name + " cannot be looked at (" + std::strerror(errno) + ")");
    if (st.st_uid != uid)
        return refusal(name + " is owned by user " + user_name(st.st_uid) + ", not " +
                       user_name(uid));
    return {};
}

} // namespace

OpenedFile open_log_root(const LogTreeRules &rules)
{
    // The last name not followed where it is a link: the site chose the
    // path, but anyone could have put a link at it before the folder was
    // made (systemd-tmpfiles leaves a link where it finds one).
    OpenedFile root = open_tree_folder(AT_FDCWD, rules.root, rules.root);
    if (!root)
        return root;
    struct stat st;
    if (fstat(root->fd.get(), &st) != 0)
        return refused(rules.root + " cannot be looked at (" + std::strerror(errno) + ")");
    if (st.st_uid != 0 && st.st_uid != rules.root_owner)
        return refused(rules.root + " is owned by user " + user_name(st.st_uid) + ", not root" +
                       (rules.root_owner ? " or " + user_name(rules.root_owner) : ""));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
        return refused(rules.root + " is writable by others and not sticky (mode " +
                       mode_text(st.st_mode) + ")");
    return root;
}

Result<void> prepare_user_folder(const LogTreeRules &rules, const std::string &user, uid_t uid,
                                 gid_t gid)
{
    OpenedFile root = open_log_root(rules);
    if (!root)
        return refusal(root.why());
    UniqueFd root_fd = std::move(root->fd);
    const std::string name = rules.root + "/" + user;
    // Made here as root, in a folder only root (or, sticky, nobody else)
    // may change: what is at the name after a mkdir is what it made, or a
    // folder somebody made first, whose owner says whose it is.
    OpenedFile made = explained(make_folder(root_fd.get(), user.c_str(), 0700, Owner::anyone()),
                                root_fd.get(), user, name);
    if (!made)
        return refusal(made.why());
    UniqueFd folder = std::move(made->fd);
    struct stat st;
    if (fstat(folder.get(), &st) != 0)
        return refusal(name + " cannot be looked at (" + std::strerror(errno) + ")");
    if (st.st_uid != uid && st.st_uid != 0)
        return refusal(name + " is owned by user " + user_name(st.st_uid) + ", not " + user);
    // The site's rules on every use, so that a group named later, or a
    // folder an older plugin made 0755, follow them.
    if (fchown(folder.get(), uid, rules.has_readers ? rules.readers : gid) != 0 ||
        fchmod(folder.get(), user_folder_mode(rules)) != 0)
        return refusal(name + " cannot be given to user " + user + " (" + std::strerror(errno) +
                       ")");
    return {};
}

Result<void> make_job_folder(const LogTreeRules &rules, const std::string &user,
                             const std::string &job, uid_t uid)
{
    OpenedFile root = open_log_root(rules);
    if (!root)
        return refusal(root.why());
    UniqueFd root_fd = std::move(root->fd);
    OpenedFile user_folder = open_user_folder(rules, root_fd.get(), user);
    if (!user_folder)
        return refusal(user_folder.why());
    UniqueFd user_fd = std::move(user_folder->fd);
    const std::string user_name = rules.root + "/" + user;
    if (Result<void> owned = owned_by(user_fd.get(), uid, user_name); !owned)
        return owned;
    const std::string name = user_name + "/" + job;
    OpenedFile made =
        explained(make_folder(user_fd.get(), job.c_str(), job_folder_mode(rules), Owner::is(uid)),
                  user_fd.get(), job, name);
    if (!made)
        return refusal(made.why());
    UniqueFd job_fd = std::move(made->fd);
    // Its mode whatever the umask; changed only where it differs, since a
    // change by a user outside the folder's group drops the set-group-ID
    // bit it took from LOGDIR/USER, by which its files take the readers'
    // group.
    struct stat st;
    const mode_t wanted = job_folder_mode(rules);
    if (fstat(job_fd.get(), &st) != 0 ||
        ((st.st_mode & 0777) != wanted &&
         fchmod(job_fd.get(), wanted | (st.st_mode & S_ISGID)) != 0))
        return refusal(name + " cannot be given its mode (" + std::strerror(errno) + ")");
    return {};
}

Result<UniqueFd> open_job_folder(const LogTreeRules &rules, const std::string &user,
                                 const std::string &job, uid_t uid)
{
    OpenedFile root = open_log_root(rules);
    if (!root) {
        // Missing is not refused: srun's host (a login node) may have no
        // LOGDIR where the job's nodes have one.
        if (root.system_error() != ENOENT)
            return Result<UniqueFd>::failure(root.status(), root.why());
        return UniqueFd();
    }
    UniqueFd root_fd = std::move(root->fd);
    OpenedFile user_folder = open_user_folder(rules, root_fd.get(), user);
    if (!user_folder)
        return UniqueFd();
    UniqueFd user_fd = std::move(user_folder->fd);
    if (Result<void> owned = owned_by(user_fd.get(), uid, rules.root + "/" + user); !owned)
        return Result<UniqueFd>::failure(owned.status(), owned.why());
    OpenedFile job_folder =
        open_tree_folder(user_fd.get(), job, rules.root + "/" + user + "/" + job);
    if (!job_folder)
        return UniqueFd();
    if (Result<void> owned =
            owned_by(job_folder->fd.get(), uid, rules.root + "/" + user + "/" + job);
        !owned)
        return UniqueFd();
    return std::move(job_folder->fd);
}

} // namespace gdrhook::slurm
