// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Bounded lock-free queue, many producers and one consumer, after Dmitry
// Vyukov's bounded MPMC ring.
//
// Invariants:
//  - capacity is a power of two; cell i is reused every `capacity` positions.
//  - cell.sequence == pos        : the cell is free for the producer that
//                                  claims position `pos`;
//    cell.sequence == pos + 1    : the cell holds the item of position `pos`,
//                                  ready for the consumer;
//    once the consumer releases it, cell.sequence = pos + capacity, which
//    frees it for the producer of the next lap.
//  - the consumer takes items (try_take) and releases the cells it took
//    later (release_taken), once it has done with them what must happen
//    first: the pipeline releases a cell only after the item's log line is
//    written, so that a cell's sequence tells, even in a copy of the cells
//    a dead process left behind (cache/events/journal.h), whether its item
//    may still be missing from the log. try_pop is take-and-release.
//  - enqueue_pos_ only grows; a producer claims a position with one CAS and
//    then owns the cell exclusively until it publishes the sequence.
//  - dequeue_pos_ is written by the single consumer only.
//
// try_push never allocates and never blocks: when the ring is full it
// returns false and the caller handles the item itself (no item is lost).
#pragma once

#include "cache/prim/hot_arena.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

namespace gdrhook {

inline constexpr size_t cache_line_size = 64;

// Asks for the line in exclusive state, ready to be written. GCC emits
// PREFETCHW for __builtin_prefetch(p, 1) only when told the CPU has it
// (-mprfchw), and a plain read prefetch leaves the line shared with the
// consumer: the store then waits for the other core to let go of it. Every
// x86-64 CPU since Broadwell and every AMD one executes PREFETCHW, and
// older Intel ones treat the encoding as a no-op.
inline void prefetch_for_write(const void *address)
{
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char *>(address)));
#else
    __builtin_prefetch(address, 1, 3);
#endif
}

// Nothing extra on the producers' line (see BoundedMpscQueue).
struct NoProducerShared {};

// Aligned and padded to whole cache lines, so that whatever an enclosing
// object puts next to it does not share a line with dequeue_pos_.
//
// ProducerShared: what the owner of the queue has every producer read on
// each push (a pipeline's flags), kept on the line the push writes anyway:
// a push after the line was evicted then misses once, not twice. Written
// rarely, or the producers would bounce it.
template <typename T, typename ProducerShared = NoProducerShared>
class alignas(cache_line_size) BoundedMpscQueue {
    static_assert(std::is_trivially_copyable_v<T>, "items are copied into the ring by value");

public:
    // capacity must be a power of two, at least 2. The cells live in
    // `cells_memory` when given (capacity * cell_size bytes, aligned to a
    // cache line, outliving the queue: the journal's file mapping), else
    // with the other hot objects (hot_arena.h).
    explicit BoundedMpscQueue(size_t capacity, void *cells_memory = nullptr)
        : mask_(capacity - 1),
          owned_cells_(cells_memory ? HotArray<Cell>() : make_hot_array<Cell>(capacity))
    {
        cells_ = cells_memory ? static_cast<Cell *>(cells_memory) : owned_cells_.get();
        if (cells_memory)
            for (size_t i = 0; i < capacity; ++i)
                new (&cells_[i]) Cell();
        for (size_t i = 0; i < capacity; ++i)
            cells_[i].sequence.store(i, std::memory_order_relaxed);
    }

    BoundedMpscQueue(const BoundedMpscQueue &) = delete;
    BoundedMpscQueue &operator=(const BoundedMpscQueue &) = delete;

    size_t capacity() const { return mask_ + 1; }

    ProducerShared &producer_shared() { return producer_shared_; }
    const ProducerShared &producer_shared() const { return producer_shared_; }

    // Any thread. Returns false when the ring is full.
    bool try_push(const T &item)
    {
        size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
        for (;;) {
            Cell &cell = cells_[pos & mask_];
            // acquire: pairs with the consumer's release of this cell, so
            // its read of the previous lap's item happened before we write.
            size_t seq = cell.sequence.load(std::memory_order_acquire);
            intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
            if (diff == 0) {
                // relaxed is enough: the cell's sequence, not the position
                // counter, publishes the item.
                if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    cell.item = item;
                    // release: the item is visible to the consumer before
                    // the sequence says it is there.
                    cell.sequence.store(pos + 1, std::memory_order_release);
                    // The consumer read the next cell last, so it is cold in
                    // this core's cache: start fetching it for writing now,
                    // while the application goes on, not on the next push.
                    const char *next = reinterpret_cast<const char *>(&cells_[(pos + 1) & mask_]);
                    for (size_t line = 0; line < sizeof(Cell); line += cache_line_size)
                        prefetch_for_write(next + line);
                    return true;
                }
            } else if (diff < 0) {
                return false; // a full lap behind the consumer: full
            } else {
                pos = enqueue_pos_.load(std::memory_order_relaxed);
            }
        }
    }

    // The single consumer only. `position` is the item's place in the
    // order of pushes. The cell stays the item's until release_taken().
    bool try_take(T &out, size_t &position)
    {
        size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
        Cell &cell = cells_[pos & mask_];
        // acquire: pairs with the producer's release, the item is complete.
        size_t seq = cell.sequence.load(std::memory_order_acquire);
        if (static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1) < 0)
            return false; // empty, or the producer of `pos` has not published
        out = cell.item;
        position = pos;
        dequeue_pos_.store(pos + 1, std::memory_order_relaxed);
        return true;
    }

    // The single consumer only: frees every cell taken so far for the
    // producers of the next lap.
    void release_taken()
    {
        const size_t taken = dequeue_pos_.load(std::memory_order_relaxed);
        for (; released_pos_ != taken; ++released_pos_)
            // release: our read of the item is done before a producer reuses it.
            cells_[released_pos_ & mask_].sequence.store(released_pos_ + mask_ + 1,
                                                         std::memory_order_release);
    }

    bool try_pop(T &out, size_t &position)
    {
        if (!try_take(out, position))
            return false;
        release_taken();
        return true;
    }

    bool try_pop(T &out)
    {
        size_t position;
        return try_pop(out, position);
    }

    // Whether an item may be waiting. Used by the consumer's sleep protocol.
    bool maybe_nonempty() const
    {
        size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
        const Cell &cell = cells_[pos & mask_];
        return cell.sequence.load(std::memory_order_seq_cst) == pos + 1;
    }

    // Forget every item (a forked child drops what its parent will log).
    // Only safe when no other thread touches the queue.
    void reset()
    {
        for (size_t i = 0; i <= mask_; ++i)
            cells_[i].sequence.store(i, std::memory_order_relaxed);
        enqueue_pos_.store(0, std::memory_order_relaxed);
        dequeue_pos_.store(0, std::memory_order_relaxed);
        released_pos_ = 0;
    }

    // One cell: its sequence word, then the item (the journal's cells have
    // this layout, cache/events/journal_layout.h).
    struct alignas(cache_line_size) Cell {
        std::atomic<size_t> sequence;
        T item;
    };
    static constexpr size_t cell_size = sizeof(Cell);

private:
    // What a push reads and writes besides its cell, on one line: the
    // consumer only reads mask_ and cells_ here, once per drain, while the
    // producers write enqueue_pos_ and read producer_shared_.
    static_assert(sizeof(size_t) + sizeof(Cell *) + sizeof(std::atomic<size_t>) +
                          sizeof(ProducerShared) <=
                      cache_line_size,
                  "a push's line holds the counter and the shared flags");
    const size_t mask_;
    Cell *cells_; // owned_cells_, or memory the owner of the queue keeps
    std::atomic<size_t> enqueue_pos_{0};
    [[no_unique_address]] ProducerShared producer_shared_;
    // The consumer's counters, on a line of their own so they do not bounce.
    alignas(cache_line_size) std::atomic<size_t> dequeue_pos_{0};
    size_t released_pos_ = 0;
    // hot_arena.h: with the rest of the hot path; empty with outside memory.
    HotArray<Cell> owned_cells_;
};

} // namespace gdrhook
