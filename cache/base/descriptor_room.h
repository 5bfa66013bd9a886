// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Room for gdrhook's descriptors above the program's own limit. A
// descriptor at a number below the soft RLIMIT_NOFILE is one the
// program's open() cannot have: the dma-buf pins, an eighth of the limit,
// made a program near its limit get EMFILE that much earlier
// (tests/gpu/more_programs/descriptors_near_limit.py: 988 files plain,
// 858 hooked). The kernel checks the limit only when a number is handed
// out, so while a DescriptorRoom lives the soft limit is raised (where the
// hard limit allows), our descriptors are made or moved at numbers from
// the program's limit up, and the limit is put back as the program set
// it. Windows are serialized and never nested (a second one on the same
// thread would wait for itself); a program's own setrlimit(RLIMIT_NOFILE)
// racing one is the one thing it can lose.
#pragma once

#include <sys/resource.h>

namespace gdrhook {

class DescriptorRoom {
public:
    DescriptorRoom();
    ~DescriptorRoom();
    DescriptorRoom(const DescriptorRoom &) = delete;
    DescriptorRoom &operator=(const DescriptorRoom &) = delete;

    // The soft limit the program has, from which our numbers go up; 0
    // when no room could be made (the hard limit reached, a limit above
    // 65,536 or none, or setrlimit refused): then callers keep to
    // numbers below it.
    rlim_t program_limit() const;
};

// Around a fork: no window is open while it happens (the child would keep
// the raised limit, and a lock nobody in it will release).
void descriptor_room_before_fork();
void descriptor_room_after_fork_in_parent();
void descriptor_room_after_fork_in_child();

} // namespace gdrhook
