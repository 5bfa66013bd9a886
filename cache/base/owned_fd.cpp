// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/owned_fd.h"

#include "cache/base/descriptor_room.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrhook {
namespace {

// Where no room above the limit can be made: a program's own opens take
// the lowest free numbers; one that dup2()s onto fixed numbers picks
// small ones. Three quarters of the way up the descriptor limit (at most 3/4 of 1024, for programs that select(2)) is
// out of the way of both; where the limit is tiny the descriptor stays
// where it is.
int high_floor()
{
    rlimit limit = {};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return 0;
    const rlim_t cap = std::min<rlim_t>(limit.rlim_cur, 1024);
    return cap >= 64 ? static_cast<int>(cap / 4 * 3) : 0;
}

} // namespace

OwnedFd OwnedFd::adopt(UniqueFd fd, bool move_high)
{
    OwnedFd owned;
    if (!fd.valid())
        return owned;
    if (move_high) {
        // Above the program's limit where the hard limit leaves room (its
        // opens then get every number they get without us); else high
        // below it.
        DescriptorRoom room;
        const rlim_t limit = room.program_limit();
        const int floor = limit ? static_cast<int>(limit) : high_floor();
        if (floor > fd.get()) {
            const int moved = fcntl(fd.get(), F_DUPFD_CLOEXEC, floor);
            if (moved >= 0)
                fd.reset(moved);
        }
    }
    struct stat st;
    if (fstat(fd.get(), &st) == 0) {
        owned.dev_ = st.st_dev;
        owned.ino_ = st.st_ino;
    }
    owned.fd_ = std::move(fd);
    return owned;
}

OwnedFd &OwnedFd::operator=(OwnedFd &&other) noexcept
{
    if (this != &other) {
        reset();
        fd_ = std::move(other.fd_);
        dev_ = other.dev_;
        ino_ = other.ino_;
    }
    return *this;
}

bool OwnedFd::still_ours() const
{
    struct stat st;
    return fd_.valid() && fstat(fd_.get(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

int OwnedFd::reset()
{
    if (!fd_.valid())
        return 0;
    if (!still_ours()) {
        fd_.release(); // the program's number now: forgotten, never closed
        return EBADF;
    }
    return fd_.reset();
}

} // namespace gdrhook
