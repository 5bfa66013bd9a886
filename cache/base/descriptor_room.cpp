// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/descriptor_room.h"

#include <algorithm>
#include <mutex>
#include <new>

namespace gdrhook {
namespace {

// One window at a time in the process: two overlapping ones would each
// read the other's raised limit and put that back. Never nested: each
// window lives for one export or one move (dmabuf_backend.cpp,
// owned_fd.cpp), and neither makes another inside it.
std::mutex window_lock;
rlimit program_set = {};
bool raised = false;

// Room for every descriptor we may hold: the pins' budget is an eighth
// of the limit (descriptor_budget.h), plus the log, the journal and
// /dev/gdrhook.
rlim_t raised_limit(const rlimit &limit)
{
    return std::min(limit.rlim_max, limit.rlim_cur + limit.rlim_cur / 4 + 64);
}

// Numbers above a huge limit would grow the descriptor table to match
// (8 bytes a number); a program with such a limit is not near it.
constexpr rlim_t largest_limit_to_go_above = 1 << 16;

} // namespace

DescriptorRoom::DescriptorRoom()
{
    window_lock.lock();
    raised = false;
    if (getrlimit(RLIMIT_NOFILE, &program_set) != 0 || program_set.rlim_cur == RLIM_INFINITY ||
        program_set.rlim_max <= program_set.rlim_cur ||
        program_set.rlim_cur > largest_limit_to_go_above)
        return;
    const rlimit wider = {raised_limit(program_set), program_set.rlim_max};
    raised = setrlimit(RLIMIT_NOFILE, &wider) == 0;
}

DescriptorRoom::~DescriptorRoom()
{
    if (raised) {
        setrlimit(RLIMIT_NOFILE, &program_set);
        raised = false;
    }
    window_lock.unlock();
}

rlim_t DescriptorRoom::program_limit() const
{
    return raised ? program_set.rlim_cur : 0;
}

void descriptor_room_before_fork()
{
    window_lock.lock();
}

void descriptor_room_after_fork_in_parent()
{
    window_lock.unlock();
}

void descriptor_room_after_fork_in_child()
{
    // The forking thread held the lock (descriptor_room_before_fork); the
    // child has no window open: a fresh lock, not an unlock of one whose
    // owner the child's thread may not be.
    new (&window_lock) std::mutex();
}

} // namespace gdrhook
