// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/job_step.h"
#include "read/log_event.h"

#include <cstddef>
#include <utility>

namespace gdrhook::cli {

// The one reader (BatchedLogReader) for a consumer that needs every event
// whole, in the order of time across the files, each file keeping its own
// order: `log check`, `log timeline` and `gdrhook run`'s verdict. Each
// event is its own step, carried whole to take(), which hands it to
// @p add(event, where). Batches of whole events cost more memory than
// steps do: such a reader is given every_event_steps.
//
// The steps, each an event of about 440 bytes, held for all files together
// (BatchedLogReader's step budget): about 28 MiB for up to 1,024 files;
// beyond, the least batch (64 events) a file.
inline constexpr size_t every_event_steps = 1u << 16;

template <typename Add> class EveryEvent final : public JobStepConsumer {
public:
    explicit EveryEvent(Add add) : add_(std::move(add)) {}

    JobStep digest(const LogEvent &, const SourceLocation &) override
    {
        JobStep step;
        step.kind = JobStep::Kind::whole_event;
        return step;
    }
    void take(const JobStep &, const LogEvent *event, const SourceLocation &where) override
    {
        add_(*event, where);
    }

private:
    Add add_;
};

} // namespace gdrhook::cli
