// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The seqlock of the lock-free tables (cache/prim/seqlock.h) on its own:
// one writer rewrites a slot of several fields, each write giving every
// field the same number, while readers copy the slot. The invariant: a
// copy the seqlock keeps is one write's, all its fields the same number,
// never a mix of two writes (torn). Nothing is timed: the writer writes
// until each reader has made its count of copies; the readers copy until
// it is done, then once more, and that last copy is kept and is the last
// write. The fences' orders are not what this can show on x86-64 (its
// stores and loads are not reordered the ways they forbid); the version's
// odd mark, the check of it, and the check after the copy are.
#include "cache/prim/seqlock.h"

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

using namespace gdrhook;

namespace {

// Several fields, so that a reader in the middle of a write has a wide
// window to copy some fields of the new write and some of the old.
constexpr size_t field_count = 8;

struct Slot {
    std::atomic<uint64_t> version{0};
    std::array<std::atomic<uint64_t>, field_count> fields{};
};

// Each write and each copy gives the processor away at a field that
// changes from one to the next (or at none), so that copies and writes
// overlap in every way even where the threads share one core (the machine
// is busy, or has one).
size_t yield_place(uint64_t count)
{
    return static_cast<size_t>(count % (field_count + 1));
}

void write_slot(Slot &slot, uint64_t value)
{
    seqlock_write(slot.version, [&] {
        for (size_t i = 0; i < field_count; ++i) {
            if (i == yield_place(value))
                std::this_thread::yield();
            slot.fields[i].store(value, std::memory_order_relaxed);
        }
    });
}

// One copy of the slot (the copier's `count`th); whether the seqlock kept
// it.
bool read_slot(const Slot &slot, uint64_t count, std::array<uint64_t, field_count> &copy)
{
    const uint64_t begun = seqlock_read_begin(slot.version);
    for (size_t i = 0; i < field_count; ++i) {
        if (i == yield_place(count))
            std::this_thread::yield();
        copy[i] = slot.fields[i].load(std::memory_order_relaxed);
    }
    return seqlock_read_valid(slot.version, begun);
}

bool one_write(const std::array<uint64_t, field_count> &copy)
{
    for (uint64_t value : copy)
        if (value != copy[0])
            return false;
    return true;
}

struct ReaderSaw {
    bool torn = false;       // a kept copy mixed two writes
    uint64_t torn_first = 0; // its first field and a field that differs
    uint64_t torn_other = 0;
    bool last_kept = false;  // the copy after the writer ended was kept
    uint64_t last_value = 0; // and held this
};

} // namespace

TEST_CASE("a copy the seqlock keeps is one whole write, never a mix of two", "[race]")
{
    // The writer writes until every reader has made this many copies, so
    // that their copies overlap its writes however the threads are
    // scheduled; well under a second, ThreadSanitizer's build included.
    constexpr uint64_t copies_each = 20000;
    const unsigned readers = 3;
    Slot slot;
    std::atomic<bool> writer_done{false};
    std::atomic<bool> torn_seen{false}; // the first torn copy ends every loop
    std::vector<ReaderSaw> saw(readers);
    std::vector<std::atomic<uint64_t>> copies(readers);
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < readers; ++r)
        threads.emplace_back([&, r] {
            std::array<uint64_t, field_count> copy;
            while (!writer_done.load(std::memory_order_acquire)) {
                const uint64_t count = copies[r].fetch_add(1, std::memory_order_relaxed);
                if (read_slot(slot, count, copy) && !one_write(copy) && !saw[r].torn) {
                    saw[r].torn = true;
                    saw[r].torn_first = copy[0];
                    for (uint64_t value : copy)
                        if (value != copy[0])
                            saw[r].torn_other = value;
                    torn_seen.store(true, std::memory_order_relaxed);
                }
            }
            saw[r].last_kept = read_slot(slot, 0, copy) && one_write(copy);
            saw[r].last_value = copy[0];
        });
    const auto readers_behind = [&] {
        for (const std::atomic<uint64_t> &made : copies)
            if (made.load(std::memory_order_relaxed) < copies_each)
                return true;
        return false;
    };
    uint64_t written = 0;
    while (readers_behind() && !torn_seen.load(std::memory_order_relaxed))
        write_slot(slot, ++written);
    writer_done.store(true, std::memory_order_release);
    for (std::thread &thread : threads)
        thread.join();
    for (const ReaderSaw &reader : saw) {
        INFO("a kept copy held " << reader.torn_first << " and " << reader.torn_other);
        CHECK_FALSE(reader.torn);
        // The writer is done and quiet: the copy is kept, and it is the last
        // write (the version's release and acquire carry the fields).
        CHECK(reader.last_kept);
        CHECK(reader.last_value == written);
    }
}

TEST_CASE("a copy begun while a write is in progress is not kept", "[middle]")
{
    // The write's middle, seen from one thread: the version is odd there.
    Slot slot;
    write_slot(slot, 1);
    bool kept_inside = true;
    seqlock_write(slot.version, [&] {
        std::array<uint64_t, field_count> copy;
        kept_inside = read_slot(slot, field_count, copy);
        slot.fields[0].store(2, std::memory_order_relaxed);
    });
    CHECK_FALSE(kept_inside);
    // A copy begun before a write and ended after it is not kept either.
    const uint64_t begun = seqlock_read_begin(slot.version);
    write_slot(slot, 3);
    CHECK_FALSE(seqlock_read_valid(slot.version, begun));
}
