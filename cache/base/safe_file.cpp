// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/safe_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace gdrhook {
namespace {

// O_NOFOLLOW: a symbolic link at the name fails the open (ELOOP).
// O_NONBLOCK: a FIFO fails it (ENXIO, no reader) or opens at once instead
// of blocking, and so does a device; the fstat after it then refuses them.
constexpr int safe_flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

enum class Kind { regular, folder, device };

OpenedFile refused(std::string why)
{
    return OpenedFile::failure(Status::error(StatusCode::refused, 0, "refused"), std::move(why));
}

OpenedFile failed(int error)
{
    return OpenedFile::failure(system_failure(error, "cannot be opened"),
                               std::string("cannot be opened (") + strerror(error) + ")");
}

// Why the file open as `st` is not one we may use, or "".
const char *refusal(const struct stat &st, Kind kind, Owner owner, bool one_name)
{
    if (kind == Kind::regular && !S_ISREG(st.st_mode))
        return "is not a regular file";
    if (kind == Kind::folder && !S_ISDIR(st.st_mode))
        return "is not a folder";
    if (kind == Kind::device && !S_ISCHR(st.st_mode))
        return "is not a character device";
    if (!owner.allows(st.st_uid))
        return "is owned by another user";
    if (one_name && st.st_nlink != 1)
        return "has other names (hard links)";
    return "";
}

// What the open gave, checked; the descriptor closed where it is refused,
// and made blocking where it is kept (reads and writes of a regular file
// wait for the disk, as they should).
OpenedFile checked(int fd, Kind kind, Owner owner, bool one_name, int kept_flags)
{
    if (fd < 0 && errno == ELOOP)
        return refused("is a symbolic link");
    if (fd < 0 && errno == ENXIO) // a FIFO nobody writes or reads, a socket
        return refused("is not a regular file");
    if (fd < 0)
        return failed(errno);
    UniqueFd held(fd);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return failed(errno);
    if (const char *why = refusal(st, kind, owner, one_name); *why)
        return refused(why);
    if (kind == Kind::regular)
        fcntl(fd, F_SETFL, kept_flags);
    return OpenFile{std::move(held), false};
}

} // namespace

Owner Owner::me_or_root()
{
    return Owner(geteuid(), true);
}

bool Owner::allows(uid_t uid) const
{
    return uid_ == any_uid || uid == uid_ || (root_too_ && uid == 0);
}

OpenedFile open_for_append(int dir, const char *name, Owner owner, bool create, mode_t mode,
                           bool readable)
{
    const int flags = safe_flags | O_APPEND | (readable ? O_RDWR : O_WRONLY);
    // A name made or removed between our two opens is tried again; a few
    // rounds, then whoever keeps swapping it gets a refusal.
    for (int round = 0; round < 4; ++round) {
        bool created = false;
        int fd = openat(dir, name, flags);
        if (fd < 0 && errno == ENOENT && create) {
            fd = openat(dir, name, flags | O_CREAT | O_EXCL, mode);
            created = fd >= 0;
            if (fd < 0 && errno == EEXIST)
                continue;
        }
        OpenedFile result = checked(fd, Kind::regular, owner, true, O_APPEND);
        result->created = created;
        return result;
    }
    return refused("changed while it was opened");
}

OpenedFile open_for_reading(int dir, const char *name, Owner owner, bool one_name)
{
    return checked(openat(dir, name, safe_flags | O_RDONLY), Kind::regular, owner, one_name, 0);
}

OpenedFile open_for_update(int dir, const char *name, Owner owner)
{
    return checked(openat(dir, name, safe_flags | O_RDWR), Kind::regular, owner, true, 0);
}

OpenedFile create_exclusive(int dir, const char *name, mode_t mode)
{
    // O_EXCL fails on any file at the name, a symbolic link included.
    OpenedFile result = checked(openat(dir, name, safe_flags | O_RDWR | O_CREAT | O_EXCL, mode),
                                Kind::regular, Owner::is(geteuid()), true, 0);
    result->created = result.ok();
    return result;
}

OpenedFile create_unnamed(const char *folder, mode_t mode)
{
    // O_TMPFILE names the folder, not the file: the folder of the log,
    // which the user chose as every folder above it (a link or not); the
    // file is new, ours and nameless until name_unnamed().
    OpenedFile result = checked(openat(AT_FDCWD, folder, O_CLOEXEC | O_TMPFILE | O_RDWR, mode),
                                Kind::regular, Owner::is(geteuid()), false, 0);
    result->created = result.ok();
    return result;
}

bool name_unnamed(int fd, const char *path)
{
    // Through /proc (any user), else AT_EMPTY_PATH (which needs
    // CAP_DAC_READ_SEARCH). linkat(2) never replaces a file at the name.
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc_path, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ||
           linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0;
}

OpenedFile open_folder(int dir, const char *name, FolderName chosen)
{
    const int follow = chosen == FolderName::named_by_user ? 0 : O_NOFOLLOW;
    return checked(openat(dir, name, (safe_flags & ~O_NOFOLLOW) | follow | O_RDONLY | O_DIRECTORY),
                   Kind::folder, Owner::anyone(), false, 0);
}

OpenedFile make_folder(int dir, const char *name, mode_t mode, Owner owner)
{
    const bool made = mkdirat(dir, name, mode) == 0;
    if (!made && errno != EEXIST)
        return failed(errno);
    OpenedFile result = checked(openat(dir, name, safe_flags | O_RDONLY | O_DIRECTORY),
                                Kind::folder, owner, false, 0);
    result->created = made && result.ok();
    return result;
}

OpenedFile open_device(const char *path)
{
    // Made by the kernel's devtmpfs (or udev), owned by root.
    return checked(openat(AT_FDCWD, path, safe_flags | O_RDWR), Kind::device, Owner::is(0), false,
                   0);
}

Result<std::string> read_small_file(const char *path, size_t limit)
{
    OpenedFile opened = open_for_reading(AT_FDCWD, path, Owner::anyone());
    if (!opened)
        return Result<std::string>::failure(opened.status(), opened.why());
    char buffer[4096];
    std::string text;
    while (text.size() < limit) {
        const ssize_t got =
            read(opened->fd.get(), buffer, std::min(sizeof buffer, limit - text.size()));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            const int error = errno;
            return Result<std::string>::failure(
                system_failure(error, "cannot be read"),
                std::string("cannot be read (") + strerror(error) + ")", std::move(text));
        }
        if (got == 0)
            break;
        text.append(buffer, static_cast<size_t>(got));
    }
    return text;
}

mode_t private_file_mode(const std::string &path)
{
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    struct stat st;
    const bool readers =
        stat(folder.c_str(), &st) == 0 && (st.st_mode & S_ISGID) && (st.st_mode & S_IRGRP);
    return readers ? 0640 : 0600;
}

namespace {

// `text` written whole to `fd`, and synced.
Result<void> write_and_sync(int fd, const std::string &text)
{
    for (size_t at = 0; at < text.size();) {
        const ssize_t put = write(fd, text.data() + at, text.size() - at);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            const int error = put < 0 ? errno : ENOSPC;
            return Result<void>::failure(system_failure(error, "cannot be written"),
                                         std::string("cannot be written (") + strerror(error) +
                                             ")");
        }
        at += static_cast<size_t>(put);
    }
    if (fsync(fd) != 0) {
        const int error = errno;
        return Result<void>::failure(system_failure(error, "cannot be written"),
                                     std::string("cannot be written (") + strerror(error) + ")");
    }
    return {};
}

} // namespace

Result<void> replace_by_rename(const std::string &path, const std::string &text, mode_t mode)
{
    const size_t slash = path.rfind('/');
    const std::string folder_name = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    OpenedFile folder = open_folder(AT_FDCWD, folder_name.c_str(), FolderName::named_by_user);
    if (!folder)
        return Result<void>::failure(folder.status(), "its folder " + folder.why());
    const int dir = folder->fd.get();
    // What is at the name now: nothing, or a regular file of ours (or
    // root's, for root) with one name; never a link, whose target a
    // rename would leave alone but a reader would not.
    const OpenedFile old = open_for_reading(dir, name.c_str(), Owner::me_or_root(), true);
    if (!old && old.system_error() != ENOENT)
        return Result<void>::failure(old.status(), old.why());
    // A name nobody can guess: another user cannot plant anything at it
    // before we make it, and O_EXCL refuses whatever is there anyway.
    std::string temporary;
    UniqueFd made;
    for (int round = 0; !made.valid() && round < 8; ++round) {
        unsigned long long random = 0;
        if (getrandom(&random, sizeof random, 0) != sizeof random) {
            const int error = errno;
            return Result<void>::failure(system_failure(error, "cannot pick a temporary name"),
                                         std::string("cannot pick a temporary name (") +
                                             strerror(error) + ")");
        }
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".tmp.%016llx", random);
        temporary = name + suffix;
        OpenedFile fresh = create_exclusive(dir, temporary.c_str(), mode);
        if (fresh)
            made = std::move(fresh->fd);
        else if (fresh.system_error() != EEXIST)
            return Result<void>::failure(fresh.status(),
                                         "cannot be made: " + temporary + " " + fresh.why());
    }
    if (!made.valid())
        return Result<void>::failure(system_failure(EEXIST, "cannot be made"),
                                     "cannot be made: every temporary name was taken");
    Result<void> done = write_and_sync(made.get(), text);
    if (done && renameat(dir, temporary.c_str(), dir, name.c_str()) != 0) {
        const int error = errno;
        done = Result<void>::failure(system_failure(error, "cannot be replaced"),
                                     std::string("cannot be replaced (") + strerror(error) + ")");
    }
    if (!done)
        unlinkat(dir, temporary.c_str(), 0);
    return done;
}

} // namespace gdrhook
