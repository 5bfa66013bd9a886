// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The free path's two costs away from the lookup: how many events a second
// the queue takes from many producers, and how long after a free its pin is
// released (the hook's flow: invalidate, unpin on the freeing thread when
// that dropped a pin, poke the worker, submit a free event; the worker's
// batch hook reports the unpins).
#pragma once

#include "cache/backends/pin_backend.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace bench {

struct QueueResult {
    int producers = 0;
    double mevents_per_s = 0;
};
QueueResult measure_queue(int producers, uint64_t events_per_producer);

struct UnpinDelayResult {
    const char *backend = "";
    uint64_t frees = 0;
    uint64_t unpins = 0;
    double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
    double unpins_per_s = 0; // from the first free to the last unpin
    // The freeing thread's part: invalidate, unpin, poke and submit (the
    // unpin is done before the free returns).
    double free_path_p50_us = 0, free_path_p99_us = 0;
    // The backend's unpin calls inside the run, per pin: what of the delay
    // is the release itself, the rest being the reclaimer's fence and scan.
    double release_p50_us = 0, release_p99_us = 0, release_max_us = 0;
};
struct UnpinBuffers {
    std::vector<uint64_t> addrs;
    uint64_t size = 0;
};
UnpinDelayResult measure_unpin_delay(std::unique_ptr<gdrhook::PinBackend> backend,
                                     const UnpinBuffers &buffers, uint64_t gap_ns);

// The backend's own cost, with no cache, queue or worker: every buffer
// pinned, then each pin released on its own (for dma-buf, one close()).
// The floor under free-to-unpin when frees come back to back.
struct ReleaseAloneResult {
    const char *backend = "";
    uint64_t releases = 0;
    double p50_us = 0, p99_us = 0;
    double releases_per_s = 0;
};
ReleaseAloneResult measure_release_alone(gdrhook::PinBackend &backend, const UnpinBuffers &buffers);

} // namespace bench
