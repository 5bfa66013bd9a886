// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// How many descriptors the pins of a backend whose pins hold one (dma-buf:
// each pin is an fd) may hold at once. The program's own open() must never
// fail because of our pins: a program holding 1,100 pinned allocations at
// the usual RLIMIT_NOFILE of 1024 got EMFILE before. The budget
// is an eighth of the soft limit the process had when the shim started;
// the pins' fds are moved above the program's limit where the hard limit
// leaves room (descriptor_room.h), else up out of its low numbers
// (owned_fd.h), and past the budget the registration cache evicts
// its least recently used pin or, when every pin is in use, pins nothing
// (cache_writer.cpp), each said in the log.
#pragma once

#include <cstdint>

namespace gdrhook {

// The budget for a soft RLIMIT_NOFILE of `soft_limit` (0: unlimited, no
// budget needed). At least 1.
uint64_t descriptor_budget(uint64_t soft_limit);

// The soft RLIMIT_NOFILE now; 0 when unlimited or unreadable.
uint64_t soft_descriptor_limit();

} // namespace gdrhook
