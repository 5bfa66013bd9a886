// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Memory for what the shim touches on every allocation and free: the
// runtime, the event pipeline, the queue's cells, the allocation tracker's
// tables. On a real GPU each page the path touches costs a TLB miss per
// call (hot_path.h); from the heap these objects span half a dozen pages.
// Here they share one 2 MiB region that the kernel backs with a
// transparent huge page where it can (madvise): one TLB entry for all of
// them. Created on first use, never at load time; never unmapped.
//
// A bump allocator: what is given back stays used. The objects placed
// here live as long as the process, or are the tracker's tables, which
// only ever double; once the region is full, or where it cannot be mapped,
// allocations come from the heap as before. Under AddressSanitizer they
// always do, so that it sees overruns.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace gdrhook {

inline constexpr size_t hot_arena_size = 2 << 20;

// Zeroed memory of `bytes` (a multiple of 2 MiB) at a 2 MiB boundary,
// advised to be backed by transparent huge pages; null if mmap fails.
// Never unmapped by anyone here.
void *map_huge_page_region(size_t bytes);

// Never fails (throws std::bad_alloc like operator new if the heap does).
void *hot_arena_allocate(size_t bytes, size_t alignment);
// Frees heap memory; arena memory is left where it is.
void hot_arena_release(void *memory);
// Whether `memory` lies in the arena (for tests).
bool in_hot_arena(const void *memory);

// Destroys the elements of an array made by make_hot_array.
template <typename T> struct HotArrayDeleter {
    size_t count = 0;
    void operator()(T *array) const
    {
        for (size_t i = 0; i < count; ++i)
            array[i].~T();
        hot_arena_release(array);
    }
};

template <typename T> using HotArray = std::unique_ptr<T[], HotArrayDeleter<T>>;

// `count` value-initialized elements.
template <typename T> HotArray<T> make_hot_array(size_t count)
{
    T *array = static_cast<T *>(hot_arena_allocate(count * sizeof(T), alignof(T)));
    for (size_t i = 0; i < count; ++i)
        new (&array[i]) T();
    return HotArray<T>(array, HotArrayDeleter<T>{count});
}

} // namespace gdrhook
