// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/hot_arena.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <sys/mman.h>

// Under AddressSanitizer everything comes from the heap, where ASan sees
// an overrun; in the arena it would not.
#if defined(__SANITIZE_ADDRESS__)
#define GDRHOOK_ARENA_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GDRHOOK_ARENA_ENABLED 0
#endif
#endif
#ifndef GDRHOOK_ARENA_ENABLED
#define GDRHOOK_ARENA_ENABLED 1
#endif

namespace gdrhook {
namespace {

std::atomic<char *> region{nullptr};
std::atomic<size_t> used{0};
std::atomic<bool> unavailable{false};

char *map_region()
{
    return static_cast<char *>(map_huge_page_region(hot_arena_size));
}

char *the_region()
{
    if (!GDRHOOK_ARENA_ENABLED)
        return nullptr;
    char *current = region.load(std::memory_order_acquire);
    if (current || unavailable.load(std::memory_order_relaxed))
        return current;
    char *fresh = map_region();
    if (!fresh) {
        unavailable.store(true, std::memory_order_relaxed);
        return nullptr;
    }
    if (!region.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) {
        munmap(fresh, hot_arena_size); // another thread mapped it first
        return current;
    }
    return fresh;
}

void *from_heap(size_t bytes, size_t alignment)
{
    void *memory = nullptr;
    if (posix_memalign(&memory, alignment, bytes ? bytes : 1) != 0)
        throw std::bad_alloc();
    return memory;
}

} // namespace

// Maps twice the size and trims to a 2 MiB boundary: a huge page needs an
// aligned range. Lock-free, so that a fork can never find it half done.
void *map_huge_page_region(size_t bytes)
{
    const size_t span = bytes + hot_arena_size;
    void *mapped = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED)
        return nullptr;
    auto start = reinterpret_cast<uintptr_t>(mapped);
    uintptr_t aligned = (start + hot_arena_size - 1) & ~(uintptr_t{hot_arena_size} - 1);
    if (aligned > start)
        munmap(mapped, aligned - start);
    if (uintptr_t end = start + span; end > aligned + bytes)
        munmap(reinterpret_cast<void *>(aligned + bytes), end - aligned - bytes);
    // Advice only: without THP the region still works, with small pages.
    madvise(reinterpret_cast<void *>(aligned), bytes, MADV_HUGEPAGE);
    return reinterpret_cast<void *>(aligned);
}

void *hot_arena_allocate(size_t bytes, size_t alignment)
{
    if (alignment < alignof(std::max_align_t))
        alignment = alignof(std::max_align_t); // also what posix_memalign needs
    char *base = the_region();
    if (!base || bytes > hot_arena_size)
        return from_heap(bytes, alignment);
    size_t offset = used.load(std::memory_order_relaxed);
    for (;;) {
        size_t start = (offset + alignment - 1) & ~(alignment - 1);
        if (start + bytes > hot_arena_size)
            return from_heap(bytes, alignment);
        if (used.compare_exchange_weak(offset, start + bytes, std::memory_order_relaxed))
            return base + start;
    }
}

void hot_arena_release(void *memory)
{
    if (memory && !in_hot_arena(memory))
        free(memory);
}

bool in_hot_arena(const void *memory)
{
    const char *base = region.load(std::memory_order_acquire);
    const auto *p = static_cast<const char *>(memory);
    return base && p >= base && p < base + hot_arena_size;
}

} // namespace gdrhook
