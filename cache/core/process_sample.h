// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The periodic sample of the process (GDRHOOK_SAMPLE_MS): what a soak run
// watches for growth (resident memory, open file descriptors, what the
// registration cache holds), logged by the event worker as a `sample`
// line among the events, so that `gdrhook log timeline` draws it on the
// same time axis as the memory the events describe.
#pragma once

#include <cstdint>

namespace gdrhook {

class EventPipeline;

// Resident set of this process in bytes (/proc/self/statm); 0 when it
// cannot be read.
uint64_t resident_bytes();

// Open file descriptors of this process (/proc/self/fd), not counting the
// one used to count them; 0 when /proc cannot be read.
uint64_t open_fd_count();

// The event worker's sample hook (EventPipeline::set_sample_hook): measures
// now and logs one `sample` event. Runs under the consumer lock.
void write_process_sample(EventPipeline &pipeline);

} // namespace gdrhook
