// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The seqlock of the lock-free tables (the pointer table of
// cache/pointers/, the page hash of cache/registration/), written once. A
// slot holds a version word, odd while its one writer changes the slot's
// fields; a reader copies the fields between two reads of the version
// and keeps the copy only where both read the same even number. Every
// field is an atomic, read and written relaxed; the version and two
// fences order them. Header-only and inlined: the readers are on the hot
// path, and a call here compiles to what each table wrote by hand.
#pragma once

#include <atomic>
#include <cstdint>

namespace gdrhook {

// The write of one slot (writers are serialized by the table):
// `write_fields` stores the slot's fields, relaxed.
template <typename WriteFields>
inline void seqlock_write(std::atomic<uint64_t> &version, WriteFields &&write_fields)
{
    const uint64_t before = version.load(std::memory_order_relaxed);
    version.store(before + 1, std::memory_order_relaxed);
    // The odd version is visible no later than any field written below.
    std::atomic_thread_fence(std::memory_order_release);
    write_fields();
    // release: a reader that sees the even version sees these fields.
    version.store(before + 2, std::memory_order_release);
}

// A read's start: the fields read after it are at least as new as the
// version it returns (acquire).
inline uint64_t seqlock_read_begin(const std::atomic<uint64_t> &version)
{
    return version.load(std::memory_order_acquire);
}

// Whether the fields read since seqlock_read_begin() answered `begun` are
// one whole write's: no writer was inside the slot at the start, and none
// came since.
inline bool seqlock_read_valid(const std::atomic<uint64_t> &version, uint64_t begun)
{
    // The reads above complete before the version is read again.
    std::atomic_thread_fence(std::memory_order_acquire);
    return !(begun & 1) && version.load(std::memory_order_relaxed) == begun;
}

} // namespace gdrhook
