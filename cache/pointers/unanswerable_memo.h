// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Pointers the table found it cannot answer for: the driver knows no
// allocation there (host memory it never saw), or the allocation is not
// one the shim saw made (an IPC import, memory from before the shim).
// Remembered so that the next query of the same pointer goes straight to
// the driver, as the program's own call would, instead of first asking
// the driver for the allocation's range again: a program that asks about
// such a buffer for every message it sends pays one driver call, not
// three.
//
// Forgotten all at once at the next allocation the shim sees, the only
// way such a pointer becomes one the table can answer for. Any guess it
// makes, stale or torn, only decides whether the driver is asked, and the
// driver's answer is always exact: it never decides an answer.
#pragma once

#include <atomic>
#include <cstdint>

namespace gdrhook {

class UnanswerableMemo {
public:
    bool holds(uint64_t ptr) const
    {
        const Entry &e = entries_[index(ptr)];
        return e.ptr.load(std::memory_order_relaxed) == ptr &&
               e.generation.load(std::memory_order_relaxed) ==
                   generation_.load(std::memory_order_relaxed);
    }

    // Read before the table judges a pointer, and handed to remember():
    // an allocation meanwhile makes that judgement one to forget.
    uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

    void remember(uint64_t ptr, uint64_t judged_at)
    {
        Entry &e = entries_[index(ptr)];
        e.generation.store(judged_at, std::memory_order_relaxed);
        e.ptr.store(ptr, std::memory_order_relaxed);
    }

    // Every pointer remembered so far may now be answerable.
    void forget_all() { generation_.fetch_add(1, std::memory_order_relaxed); }

private:
    struct Entry {
        std::atomic<uint64_t> ptr{0};
        std::atomic<uint64_t> generation{0};
    };
    static constexpr int entry_count = 256;
    static int index(uint64_t ptr)
    {
        return static_cast<int>((ptr * 0x9e3779b97f4a7c15ull) >> 56) & (entry_count - 1);
    }

    Entry entries_[entry_count];
    // Starts above every entry's: a zeroed entry holds nothing.
    std::atomic<uint64_t> generation_{1};
};

} // namespace gdrhook
