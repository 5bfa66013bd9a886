// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"
#include "read/string_table.h"
#include "report/flat_map.h"
#include "report/process_table.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gdrhook::cli {

// A pin that is still held, with what happened to its memory since.
struct PinRecord {
    int64_t pid = 0;
    uint64_t key = 0; // the entry id, or the address when the line had none
    bool has_entry_id = false;
    uint64_t addr = 0;
    uint64_t size = 0;
    std::string_view backend;
    std::string_view api;
    SourceLocation pinned_at;

    bool freed = false; // a successful free overlapped it
    SourceLocation freed_at;
    std::string_view freed_by; // the free's API
    bool unpin_failed = false; // an unpin of it returned an error
    SourceLocation failed_unpin_at;
    int64_t failed_unpin_rc = 0;
};

// A pin the kernel module revoked: no longer pinned, but its handle still
// has to be unpinned (the module's protocol) and is waited for here.
struct RevokedPin {
    PinRecord pin;
    SourceLocation revoked_at;
};

// What one event did beyond the ordinary, for the checker.
struct Outcome {
    // A pin reused the key of a pin still held: that older pin is lost.
    std::optional<PinRecord> displaced;
    // An unpin or revoke whose handle is not held in that process.
    bool unmatched_release = false;
    // A pin reused the key of a revoked pin whose unpin never came.
    std::optional<RevokedPin> revoked_not_unpinned;
    // A `died` line: the pins (and revoked pins) the process still held,
    // which its death released (the kernel closes its dma-buf fds; the
    // module releases its pins at close); its memory went with it too.
    uint64_t released_by_death = 0;
    // The event's process after it.
    uint64_t live_gpu_bytes = 0;
    uint64_t pinned_bytes = 0;
};

// Replays alloc/free/pin/unpin/revoke/ctx_destroy per process: live GPU
// bytes, pinned bytes and the pins still held. Memory grows with what is
// live at one time, never with the length of the log: about 40 bytes a
// live allocation and 30 a held pin, in flat hash maps (flat_map.h); with
// pin details (the checker's), a few hundred more a pin.
class MemoryState {
public:
    // @p pin_details: keep each pin's record (where it was pinned, whether
    // its memory was freed, revocations), which the checker needs and the
    // byte counts do not.
    explicit MemoryState(bool pin_details = true) : details_(pin_details) {}

    Outcome apply(const LogEvent &event, const SourceLocation &where);

    struct Process {
        uint64_t live_gpu_bytes = 0;
        uint64_t pinned_bytes = 0;
    };
    // The process's figures after the last event applied to it.
    Process process(const ProcessKey &key) const;

    uint64_t total_live_gpu_bytes() const { return total_live_; }
    uint64_t total_pinned_bytes() const { return total_pinned_; }
    uint64_t live_allocations() const;
    uint64_t pins_held() const;

    // Every pin still held, in no particular order (with pin details).
    std::vector<const PinRecord *> open_pins() const;

    // Every revoked pin whose unpin has not come, in no particular order
    // (with pin details).
    std::vector<const RevokedPin *> revoked_pins() const;

private:
    // One live allocation in 8 bytes, so a slot of its map is 16: the size
    // (48 bits, 256 TiB), the device + 1 (15 bits; 0 for -1, unknown) and
    // whether it is GPU memory.
    class Allocation {
    public:
        Allocation() = default;
        Allocation(uint64_t size, int64_t dev, bool gpu)
            : bits_(std::min<uint64_t>(size, size_mask) |
                    (static_cast<uint64_t>(std::clamp<int64_t>(dev + 1, 0, 0x7fff)) << 48) |
                    (gpu ? uint64_t{1} << 63 : 0))
        {}
        uint64_t size() const { return bits_ & size_mask; }
        int64_t dev() const { return static_cast<int64_t>((bits_ >> 48) & 0x7fff) - 1; }
        bool gpu() const { return bits_ >> 63; }

    private:
        static constexpr uint64_t size_mask = (uint64_t{1} << 48) - 1;
        uint64_t bits_ = 0;
    };
    struct ProcessState {
        FlatMap<Allocation> allocations; // by address
        FlatMap<uint64_t> pin_sizes;     // by key
        // With pin details:
        std::unordered_map<uint64_t, PinRecord> pins;   // by key
        std::multimap<uint64_t, uint64_t> pins_by_addr; // address -> key
        uint64_t largest_pin = 0;
        std::unordered_map<uint64_t, RevokedPin> revoked; // by key: the unpin is due
        uint64_t live_gpu_bytes = 0;
        uint64_t pinned_bytes = 0;
    };

    void on_alloc(ProcessState &p, const LogEvent &event);
    void on_free(ProcessState &p, const LogEvent &event, const SourceLocation &where);
    void on_ctx_destroy(ProcessState &p, const LogEvent &event, const SourceLocation &where);
    Outcome on_pin(ProcessState &p, const LogEvent &event, const SourceLocation &where);
    Outcome on_release(ProcessState &p, const LogEvent &event, const SourceLocation &where);
    uint64_t on_death(ProcessState &p);
    void close_pin(ProcessState &p, uint64_t key);
    void drop_allocation(ProcessState &p, uint64_t addr, const Allocation &allocation);
    void mark_freed(PinRecord &pin, const LogEvent &event, const SourceLocation &where);

    ProcessState &state_of(const ProcessKey &key);

    bool details_;
    std::unordered_map<ProcessKey, ProcessState, ProcessKeyHash> processes_;
    // The process each file's last event came from (a file is one
    // process, mostly): spares a lookup in processes_ per event.
    std::vector<std::pair<int64_t, ProcessState *>> last_of_file_;
    // PinRecord's names point here, not into the reader's table: records
    // outlive the reader (the checker reports them after reading).
    StringTable names_;
    uint64_t total_live_ = 0;
    uint64_t total_pinned_ = 0;
};

// The key a pin is matched by: its handle, else its address (tagged so it
// cannot collide with a handle).
uint64_t pin_key(const LogEvent &event);

} // namespace gdrhook::cli
