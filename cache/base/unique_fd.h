// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Owns one file descriptor: a dma-buf exported by the driver or the open
// /dev/gdrhook. Closing is the unpin for dma-buf pins, so it must happen
// exactly once and never on a number that another open has since reused.
#pragma once

#include <cerrno>
#include <unistd.h>
#include <utility>

namespace gdrhook {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }

    UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept
    {
        if (this != &other)
            reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }

    int release() { return std::exchange(fd_, -1); }

    // Closes the current descriptor (if any) and takes `fd`. Returns 0 or
    // the errno of close(); the descriptor is gone either way (Linux).
    int reset(int fd = -1)
    {
        int old = std::exchange(fd_, fd);
        if (old >= 0 && ::close(old) != 0)
            return errno;
        return 0;
    }

private:
    int fd_ = -1;
};

} // namespace gdrhook
