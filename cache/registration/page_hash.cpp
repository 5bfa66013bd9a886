// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/page_hash.h"

#include <new>
#include <sys/mman.h>

namespace gdrhook {
namespace {

uint64_t table_size(uint64_t entries)
{
    // Two pages an entry (a 64 KiB buffer that is not 64 KiB aligned
    // touches two) at load factor 0.5.
    // No budget (0): the default budget's worth. At most 2^18 entries'
    // worth: 64 MiB of address space, touched as slots are used.
    constexpr uint64_t most = uint64_t(1) << 18;
    if (entries == 0)
        entries = 65536;
    uint64_t want = (entries < most ? entries : most) * 4;
    uint64_t size = 1024;
    while (size < want)
        size <<= 1;
    return size;
}

} // namespace

PageHash::PageHash(uint64_t entries)
    : mask_(table_size(entries) - 1), shift_(64 - __builtin_ctzll(table_size(entries)))
{}

PageHash::~PageHash()
{
    if (PageHashSlot *slots = slots_.load(std::memory_order_relaxed))
        munmap(slots, capacity() * sizeof(PageHashSlot));
}

void PageHash::write(PageHashSlot &slot, uint64_t key, const PageHashValue &value,
                     uint8_t referenced)
{
    seqlock_write(slot.version, [&] {
        slot.key.store(key, std::memory_order_relaxed);
        slot.start.store(value.start, std::memory_order_relaxed);
        slot.end.store(value.end, std::memory_order_relaxed);
        slot.id.store(value.id, std::memory_order_relaxed);
        slot.buffer_id.store(value.buffer_id, std::memory_order_relaxed);
        slot.handle.store(value.handle, std::memory_order_relaxed);
        slot.fd.store(value.fd, std::memory_order_relaxed);
        slot.peer_setup_deferred.store(value.peer_setup_deferred, std::memory_order_relaxed);
        slot.referenced.store(referenced, std::memory_order_relaxed);
    });
}

bool PageHash::insert(const PageHashValue &value)
{
    if (value.end <= value.start)
        return false;
    const uint64_t pages = last_page(value.end) - first_page(value.start) + 1;
    if (pages > page_hash_max_pages || (used_ + pages) * 2 > capacity())
        return false;
    PageHashSlot *slots = slots_.load(std::memory_order_relaxed);
    if (!slots) {
        // Zeroed pages: every slot empty; the kernel backs them on first touch.
        void *memory = mmap(nullptr, capacity() * sizeof(PageHashSlot), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (memory == MAP_FAILED)
            return false;
        // Random probes over up to 16 MiB: huge pages spare a TLB miss each
        // where the kernel allows them (advice only).
        madvise(memory, capacity() * sizeof(PageHashSlot), MADV_HUGEPAGE);
        slots = new (memory) PageHashSlot[capacity()]; // trivial: writes nothing
        // release: readers that see the pointer see a table of empty slots.
        slots_.store(slots, std::memory_order_release);
    }
    for (uint64_t page = first_page(value.start); page <= last_page(value.end); ++page) {
        uint64_t at = home(page);
        while (slots[at].key.load(std::memory_order_relaxed) != 0)
            at = (at + 1) & mask_;
        write(slots[at], page + 1, value, 0);
    }
    used_ += pages;
    return true;
}

PageHashSlot *PageHash::slot_of(uint64_t page, uint64_t id) const
{
    PageHashSlot *slots = slots_.load(std::memory_order_relaxed);
    if (!slots)
        return nullptr;
    for (uint64_t at = home(page);; at = (at + 1) & mask_) {
        PageHashSlot &slot = slots[at];
        uint64_t key = slot.key.load(std::memory_order_relaxed);
        if (key == 0)
            return nullptr;
        if (key == page + 1 && slot.id.load(std::memory_order_relaxed) == id)
            return &slot;
    }
}

void PageHash::erase(uint64_t at)
{
    // Backward-shift deletion: move later members of the chain whose home
    // is not in (at, next] into the hole, so that no probe chain breaks.
    PageHashSlot *slots = slots_.load(std::memory_order_relaxed);
    for (uint64_t next = (at + 1) & mask_;; next = (next + 1) & mask_) {
        PageHashSlot &moving = slots[next];
        const uint64_t key = moving.key.load(std::memory_order_relaxed);
        if (key == 0)
            break;
        const uint64_t h = home(key - 1);
        const bool stays = at <= next ? (at < h && h <= next) : (at < h || h <= next);
        if (stays)
            continue;
        write(slots[at], key, read(moving), moving.referenced.load(std::memory_order_relaxed));
        at = next;
    }
    write(slots[at], 0, PageHashValue{}, 0);
}

void PageHash::remove(uint64_t start, uint64_t end, uint64_t id)
{
    PageHashSlot *slots = slots_.load(std::memory_order_relaxed);
    if (!slots || end <= start)
        return;
    for (uint64_t page = first_page(start); page <= last_page(end); ++page) {
        if (PageHashSlot *slot = slot_of(page, id)) {
            erase(static_cast<uint64_t>(slot - slots));
            --used_;
        }
    }
}

bool PageHash::take_referenced(uint64_t start, uint64_t end, uint64_t id)
{
    bool referenced = false;
    if (end <= start)
        return false;
    for (uint64_t page = first_page(start); page <= last_page(end); ++page)
        if (PageHashSlot *slot = slot_of(page, id))
            if (slot->referenced.load(std::memory_order_relaxed)) {
                slot->referenced.store(0, std::memory_order_relaxed);
                referenced = true;
            }
    return referenced;
}

} // namespace gdrhook
