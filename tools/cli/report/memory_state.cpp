// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/memory_state.h"

namespace gdrhook::cli {

uint64_t pin_key(const LogEvent &event)
{
    return event.has_entry_id ? event.entry_id : (event.addr | (1ull << 63));
}

namespace {

// These frees name a pool, a graph or an executable graph (0 for a trim)
// in "addr": no allocation starts there.
bool names_a_container(const LogEvent &event)
{
    return event.api == "cuMemPoolTrimTo" || event.api == "cuMemPoolDestroy" ||
           event.api == "cuDeviceGraphMemTrim" || event.api == "cuGraphDestroy" ||
           event.api == "cuGraphExecDestroy";
}

// Those, and the frees of a physical handle, name no virtual range, so
// they cannot overlap a pinned range.
bool frees_a_virtual_range(const LogEvent &event)
{
    return !names_a_container(event) && event.api != "cuMemRelease" &&
           event.mem_kind != to_string(MemoryKind::vmm_physical);
}

bool same_device(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

} // namespace

Outcome MemoryState::apply(const LogEvent &event, const SourceLocation &where)
{
    ProcessState &p = state_of(process_key(event, where));
    Outcome outcome;
    switch (event.kind) {
    case EventKind::alloc:
        if (event.rc == 0)
            on_alloc(p, event);
        break;
    case EventKind::free:
        if (event.rc == 0) // a failed free frees nothing
            on_free(p, event, where);
        break;
    case EventKind::ctx_destroy:
        if (event.rc == 0)
            on_ctx_destroy(p, event, where);
        break;
    case EventKind::pin:
        if (event.rc == 0) // a failed pin holds nothing
            outcome = on_pin(p, event, where);
        break;
    case EventKind::unpin:
    case EventKind::revoke: outcome = on_release(p, event, where); break;
    case EventKind::died: outcome.released_by_death = on_death(p); break;
    // Written as the process ended, after its teardown: what it held then
    // went with it, whether or not the lines past the cap said so.
    case EventKind::capped: outcome.released_by_death = on_death(p); break;
    default: break;
    }
    outcome.live_gpu_bytes = p.live_gpu_bytes;
    outcome.pinned_bytes = p.pinned_bytes;
    return outcome;
}

// docs/log-format.md, "Recovered logs": nothing of a dead process stays
// allocated or pinned.
uint64_t MemoryState::on_death(ProcessState &p)
{
    const uint64_t released = p.pin_sizes.size() + p.revoked.size();
    total_live_ -= p.live_gpu_bytes;
    total_pinned_ -= p.pinned_bytes;
    p.live_gpu_bytes = 0;
    p.pinned_bytes = 0;
    p.allocations = FlatMap<Allocation>();
    p.pin_sizes = FlatMap<uint64_t>();
    p.pins.clear();
    p.pins_by_addr.clear();
    p.revoked.clear();
    return released;
}

MemoryState::ProcessState &MemoryState::state_of(const ProcessKey &key)
{
    if (key.file >= last_of_file_.size())
        last_of_file_.resize(key.file + 1, {0, nullptr});
    auto &last = last_of_file_[key.file];
    if (!last.second || last.first != key.pid)
        last = {key.pid, &processes_[key]}; // unordered_map: the element stays put
    return *last.second;
}

void MemoryState::on_alloc(ProcessState &p, const LogEvent &event)
{
    // The same address allocated again without a free we saw: the old
    // allocation is gone (its free predates the log or was not logged).
    if (const Allocation *old = p.allocations.find(event.addr))
        drop_allocation(p, event.addr, *old);
    Allocation allocation(event.size, event.dev, counts_as_gpu_memory(event.mem_kind));
    p.allocations.set(event.addr, allocation);
    if (allocation.gpu()) {
        p.live_gpu_bytes += allocation.size();
        total_live_ += allocation.size();
    }
}

void MemoryState::drop_allocation(ProcessState &p, uint64_t addr, const Allocation &allocation)
{
    if (allocation.gpu()) {
        p.live_gpu_bytes -= allocation.size();
        total_live_ -= allocation.size();
    }
    p.allocations.erase(addr);
}

void MemoryState::mark_freed(PinRecord &pin, const LogEvent &event, const SourceLocation &where)
{
    if (pin.freed)
        return;
    pin.freed = true;
    pin.freed_at = where;
    pin.freed_by = names_.intern(event.api);
}

void MemoryState::on_free(ProcessState &p, const LogEvent &event, const SourceLocation &where)
{
    if (const Allocation *found =
            names_a_container(event) ? nullptr : p.allocations.find(event.addr))
        drop_allocation(p, event.addr, *found);

    if (!frees_a_virtual_range(event) || p.pins_by_addr.empty())
        return;
    // A free of unknown size (0) still frees the allocation at its address.
    uint64_t begin = event.addr;
    uint64_t end = begin + (event.size ? event.size : 1);
    // Pins are indexed by start; one that overlaps starts at most
    // largest_pin before the freed range.
    uint64_t from = begin > p.largest_pin ? begin - p.largest_pin : 0;
    for (auto it = p.pins_by_addr.lower_bound(from); it != p.pins_by_addr.end() && it->first < end;
         ++it) {
        PinRecord &pin = p.pins[it->second];
        if (pin.addr + (pin.size ? pin.size : 1) > begin)
            mark_freed(pin, event, where);
    }
}

void MemoryState::on_ctx_destroy(ProcessState &p, const LogEvent &event,
                                 const SourceLocation &where)
{
    // Tearing down a context releases every allocation made in it.
    std::vector<std::pair<uint64_t, Allocation>> released;
    p.allocations.for_each([&](uint64_t addr, const Allocation &allocation) {
        if (same_device(allocation.dev(), event.dev))
            released.emplace_back(addr, allocation);
    });
    for (const auto &[addr, allocation] : released)
        drop_allocation(p, addr, allocation);
    for (auto &entry : p.pins)
        mark_freed(entry.second, event, where);
}

Outcome MemoryState::on_pin(ProcessState &p, const LogEvent &event, const SourceLocation &where)
{
    Outcome outcome;
    uint64_t key = pin_key(event);
    if (p.pin_sizes.find(key)) {
        if (details_)
            outcome.displaced = p.pins.at(key);
        close_pin(p, key);
    }
    p.pin_sizes.set(key, event.size);
    p.pinned_bytes += event.size;
    total_pinned_ += event.size;
    if (!details_)
        return outcome;

    auto revoked = p.revoked.find(key);
    if (revoked != p.revoked.end()) {
        outcome.revoked_not_unpinned = revoked->second;
        p.revoked.erase(revoked);
    }
    PinRecord pin;
    pin.pid = event.pid;
    pin.key = key;
    pin.has_entry_id = event.has_entry_id;
    pin.addr = event.addr;
    pin.size = event.size;
    pin.backend = names_.intern(event.backend);
    pin.api = names_.intern(event.api);
    pin.pinned_at = where;
    p.pins.emplace(key, pin);
    p.pins_by_addr.emplace(event.addr, key);
    if (event.size > p.largest_pin)
        p.largest_pin = event.size;
    return outcome;
}

Outcome MemoryState::on_release(ProcessState &p, const LogEvent &event, const SourceLocation &where)
{
    Outcome outcome;
    uint64_t key = pin_key(event);
    if (!p.pin_sizes.find(key)) {
        // The kernel module reports a revocation, then the handle is still
        // unpinned to free it: that unpin is the end of the same pin.
        if (details_ && !(event.kind == EventKind::unpin && p.revoked.erase(key)))
            outcome.unmatched_release = true;
        return outcome;
    }
    if (event.kind == EventKind::unpin && event.rc != 0) {
        // Still pinned: the check reports it unless a later unpin works.
        if (details_) {
            PinRecord &pin = p.pins.at(key);
            pin.unpin_failed = true;
            pin.failed_unpin_at = where;
            pin.failed_unpin_rc = event.rc;
        }
        return outcome;
    }
    if (details_ && event.kind == EventKind::revoke)
        p.revoked[key] = RevokedPin{p.pins.at(key), where};
    close_pin(p, key);
    return outcome;
}

void MemoryState::close_pin(ProcessState &p, uint64_t key)
{
    uint64_t size = *p.pin_sizes.find(key);
    p.pin_sizes.erase(key);
    p.pinned_bytes -= size;
    total_pinned_ -= size;
    if (!details_)
        return;
    auto found = p.pins.find(key);
    auto range = p.pins_by_addr.equal_range(found->second.addr);
    for (auto it = range.first; it != range.second; ++it) {
        if (it->second == key) {
            p.pins_by_addr.erase(it);
            break;
        }
    }
    p.pins.erase(found);
}

MemoryState::Process MemoryState::process(const ProcessKey &key) const
{
    auto found = processes_.find(key);
    if (found == processes_.end())
        return {};
    return {found->second.live_gpu_bytes, found->second.pinned_bytes};
}

uint64_t MemoryState::live_allocations() const
{
    uint64_t count = 0;
    for (const auto &entry : processes_)
        count += entry.second.allocations.size();
    return count;
}

uint64_t MemoryState::pins_held() const
{
    uint64_t count = 0;
    for (const auto &entry : processes_)
        count += entry.second.pin_sizes.size();
    return count;
}

namespace {

// Pointers to the values of one per-process map, across every process.
template <typename Value, typename Processes, typename Member>
std::vector<const Value *> collect(const Processes &processes, Member member)
{
    std::vector<const Value *> values;
    for (const auto &process : processes)
        for (const auto &entry : process.second.*member)
            values.push_back(&entry.second);
    return values;
}

} // namespace

std::vector<const PinRecord *> MemoryState::open_pins() const
{
    return collect<PinRecord>(processes_, &ProcessState::pins);
}

std::vector<const RevokedPin *> MemoryState::revoked_pins() const
{
    return collect<RevokedPin>(processes_, &ProcessState::revoked);
}

} // namespace gdrhook::cli
