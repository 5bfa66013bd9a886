// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The journal file's layout: what a recording process keeps beside its
// event log (`<log>.<pid>.<ns>.journal`) so that the events it recorded
// outlive it, and what `gdrhook log recover` (tools/cli/log_recovery.cpp)
// reads back once it is dead. Shared by the shim and the tool; plain data.
//
//   offset 0             JournalHeader (one page)
//   cell_offset          the event queue's cells, `capacity` of them, each
//                        the 8-byte sequence word and a QueuedEvent
//                        (cache/events/event_queue.h, queued_event.h): the
//                        queue itself, mapped MAP_SHARED, so each push is a
//                        store into the file's page cache
//   strings_offset       a copy of the shim's read-only segment: a queued
//                        event names its static strings as offsets from
//                        queued_text_anchor, which lies `anchor_offset`
//                        bytes into this copy
//
// A cell whose sequence is its position + 1 holds a recorded event that the
// worker may not have written yet; the worker releases a cell only after
// the event's line was written (event_pipeline.cpp), so every other cell's
// event is in the log or was never recorded.
#pragma once

#include <atomic>
#include <cstdint>

namespace gdrhook {

inline constexpr char journal_magic[8] = {'g', 'd', 'r', 'h', 'j', 'n', 'l', '1'};
inline constexpr uint32_t journal_version = 1;
inline constexpr uint64_t journal_header_bytes = 4096;
inline constexpr const char *journal_suffix = ".journal";
// The most a journal holds: GDRHOOK_QUEUE_CAPACITY's limit, and a copy of
// the shim's read-only segment (a bigger one is not a build of ours).
inline constexpr uint64_t max_journal_capacity = 1 << 20;
inline constexpr uint64_t max_journal_strings_bytes = 16 << 20;

enum class JournalState : uint32_t {
    recording = 0, // the process may still record events into it
    complete = 1,  // everything recorded was written to the log
};

struct JournalHeader {
    char magic[8];
    uint32_t version;
    uint32_t cell_bytes; // 64
    uint64_t capacity;   // cells
    uint64_t cell_offset;
    uint64_t strings_offset;
    uint64_t strings_bytes;
    uint64_t anchor_offset; // queued_text_anchor in the strings copy
    int32_t pid;
    uint32_t time_is_tsc; // 1: events carry the TSC (event_clock.h)
    uint64_t start_ticks; // /proc/self/stat field 22: pid + this = the process
    uint64_t created_ns;  // CLOCK_REALTIME as the journal was made
    // The event clock's reference, read together as the journal was made:
    // with the TSC, turns a queued event's counter into wall time.
    uint64_t clock_tsc;
    uint64_t clock_realtime_ns;
    uint64_t clock_raw_ns;       // CLOCK_MONOTONIC_RAW
    std::atomic<uint32_t> state; // JournalState
    uint32_t reserved;
    char host[64];      // gethostname()
    char boot_id[40];   // /proc/sys/kernel/random/boot_id
    char log_name[256]; // the log's file name, without its folder
    // Set as the process ends when it could not write its log (a full
    // file system): events it could keep neither in the log nor here.
    // Older journals hold 0 here (the page is written as zeros).
    uint64_t lost_events;
};
static_assert(sizeof(JournalHeader) <= journal_header_bytes, "the header fits its page");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared with another process");

inline constexpr uint32_t journal_cell_bytes = 64;

} // namespace gdrhook
