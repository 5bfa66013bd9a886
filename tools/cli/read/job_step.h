// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_event.h"

#include <cstdint>

namespace gdrhook::cli {

// What one event did that only the order of time across all of a job's
// files can tell: the peaks of a host and of the whole job (every process
// at one time), and which messages a capped list keeps. Everything else an
// event does stays within its own process and may be worked out as soon as
// the event is read, whatever the other files are at. Kept small, so a
// batch of steps per file costs less memory than the events would.
struct JobStep {
    enum class Kind : uint8_t {
        other,        // nothing, but its place in the order
        memory,       // the process's live and pinned bytes after the event
        error,        // memory, and the event's message (its detail)
        process_line, // the process's `process` line (its detail)
        whole_event,  // the event itself, for a consumer that needs each one (EveryEvent)
    };

    int64_t ts_ns = 0;
    uint32_t process = 0; // the consumer's own numbering
    Kind kind = Kind::other;
    uint64_t live_gpu_bytes = 0;
    uint64_t pinned_bytes = 0;

    // The event itself comes with the step (rare kinds, or every event for
    // EveryEvent).
    bool has_detail() const
    {
        return kind == Kind::error || kind == Kind::process_line || kind == Kind::whole_event;
    }
};

// Reads events in two stages (BatchedLogReader): digest() sees each event
// in its file's order, files a batch at a time, and returns its step;
// take() then sees each step in the order of time across the files (each
// file keeping its own order), with its event and the event's line when
// the step has a detail (@p where is empty otherwise).
class JobStepConsumer {
public:
    virtual ~JobStepConsumer() = default;
    virtual JobStep digest(const LogEvent &event, const SourceLocation &where) = 0;
    virtual void take(const JobStep &step, const LogEvent *detail, const SourceLocation &where) = 0;
};

} // namespace gdrhook::cli
