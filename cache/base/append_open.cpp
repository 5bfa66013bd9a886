// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/append_open.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrhook {
namespace {

constexpr int append_flags = O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

// Why the file open as `st` is not a log we may append to, or "".
const char *append_refusal(const struct stat &st, uid_t owner)
{
    if (!S_ISREG(st.st_mode))
        return "is not a regular file";
    if (st.st_uid != owner)
        return "is owned by another user";
    if (st.st_nlink != 1)
        return "has other names (hard links)";
    return "";
}

AppendOpen refused(std::string why, int error = 0)
{
    AppendOpen result;
    result.why = std::move(why);
    result.error = error;
    return result;
}

AppendOpen failed(int error)
{
    return refused(std::string("cannot be opened (") + strerror(error) + ")", error);
}

} // namespace

AppendOpen open_for_append(int dir, const char *name, uid_t owner, bool create, mode_t mode,
                           bool readable)
{
    // O_NOFOLLOW: a symbolic link at the name fails the open (ELOOP).
    // O_NONBLOCK: a FIFO fails it (ENXIO, no reader) or opens at once
    // instead of blocking; the fstat below then refuses it. The open is
    // the only look at the name: a check before it could be answered by
    // one file and the open by another.
    const int flags = append_flags | (readable ? O_RDWR : O_WRONLY);
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
        if (fd < 0 && errno == ELOOP)
            return refused("is a symbolic link");
        if (fd < 0 && errno == ENXIO) // a FIFO nobody reads, a socket
            return refused("is not a regular file");
        if (fd < 0)
            return failed(errno);
        struct stat st;
        if (fstat(fd, &st) != 0) {
            const int error = errno;
            close(fd);
            return failed(error);
        }
        if (const char *why = append_refusal(st, owner); *why) {
            close(fd);
            return refused(why);
        }
        fcntl(fd, F_SETFL, O_APPEND); // blocking writes from now on
        AppendOpen result;
        result.fd = fd;
        result.created = created;
        return result;
    }
    return refused("changed while it was opened");
}

} // namespace gdrhook
