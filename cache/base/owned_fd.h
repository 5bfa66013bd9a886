// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A descriptor gdrhook opened inside somebody else's program: the journal,
// a dma-buf pin, /dev/gdrhook, and the event log where gdrhook has no
// descriptor table of its own (private_files.h). The program may close
// every descriptor it did not open (closefrom(3), as many daemons do) and
// get the same numbers back for its own files, so the number alone does
// not say the file is still ours. An OwnedFd remembers which file it is
// (device and inode) and is checked before it is used for anything that
// would harm the program's file (a write, a close); a descriptor that is
// no longer ours is forgotten, never closed (docs/design.md, "Files and
// descriptors"). It holds its descriptor as a UniqueFd, the one owner of a
// descriptor; what it adds is the check.
#pragma once

#include "cache/base/unique_fd.h"

#include <sys/types.h>
#include <utility>

namespace gdrhook {

class OwnedFd {
public:
    OwnedFd() = default;
    // Takes `fd` (an invalid one gives an invalid one). With `move_high`,
    // the descriptor moves above the program's descriptor limit where the
    // hard limit leaves room (descriptor_room.h), else to a number far
    // above the ones a program gets from its own opens (owned_fd.cpp).
    static OwnedFd adopt(UniqueFd fd, bool move_high);
    ~OwnedFd() { reset(); }

    OwnedFd(OwnedFd &&other) noexcept { *this = std::move(other); }
    OwnedFd &operator=(OwnedFd &&other) noexcept;
    OwnedFd(const OwnedFd &) = delete;
    OwnedFd &operator=(const OwnedFd &) = delete;

    int get() const { return fd_.get(); }
    bool valid() const { return fd_.valid(); }

    // Whether the number still names the file it was adopted with: one
    // fstat(2). Not for a per-event path; callers check before a batch.
    bool still_ours() const;

    // Closes the descriptor if it is still ours, else only forgets the
    // number. Returns 0, the errno of close(), or EBADF when the program
    // had closed it (the descriptor is gone either way).
    int reset();

    // Forgets the number without closing it (a forked child's copy of a
    // descriptor the parent keeps using).
    void forget() { fd_.release(); }

private:
    UniqueFd fd_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

} // namespace gdrhook
