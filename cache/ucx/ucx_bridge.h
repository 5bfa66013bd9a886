// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The UCX bridge: UCX's memory-type caches (its registration caches of
// CUDA memory and its memory-type cache) hear of every CUDA allocation and
// free from gdrhook, which sees them all, instead of from UCX's own patches
// of the driver, which miss some and fail on others.
//
// Once libucm is found (ucm_library.h), UCX's CUDA memory-type events are
// marked external (ucm_set_external_event: a UCX cache created from then
// on installs no CUDA hooks of its own), and UCX hears, through
// ucm_event_dispatch:
//   - of each free, before the real free runs (UCM_EVENT_MEM_TYPE_FREE), as
//     the second subscriber of the free sequence (notify/free_subscribers.h,
//     after the registration cache): UCX's caches drop what they hold over
//     the range while the address cannot yet come back from another
//     allocation; a context teardown's allocations before it runs;
//   - of each allocation, after it succeeded (UCM_EVENT_MEM_TYPE_ALLOC),
//     from the recorder (record/recorder.cpp).
// A thread that is inside a dispatch of ours (UCX's handlers may call
// CUDA) dispatches nothing more.
//
// When: at the first CUDA call if libucm is loaded then (GDRHOOK_UCX=on
// loads it), else at the first look after it was loaded: the hook looks
// again on its slow paths (a dlsym lookup of a CUDA name, as UCX's CUDA
// module makes when it loads), never on an allocation or a free. Those
// test one flag on the hot line (hot_line.h), which they read anyway.
#pragma once

#include "cache/base/config.h"
#include "cache/events/event.h"
#include "cache/notify/free_subscribers.h"
#include "cache/prim/hot_line.h"

#include <cstdint>

namespace gdrhook {

// The bridge as a subscriber to frees. It listens from the moment libucm
// is found: `subscription` is its place, handed to set_up_ucx_bridge().
FreeSubscriber ucx_free_subscriber();

// The runtime's, once, at start, after subscribing ucx_free_subscriber().
void set_up_ucx_bridge(UcxBridgeMode mode, FreeSubscription subscription);

// A slow path of the hook: libraries may have been loaded since the last
// look. Cheap when none was (ucm_library.h).
void look_again_for_ucx();

// Whether UCX is told of allocations: the hot path's one test.
inline bool ucx_bridge_on()
{
    return GDRHOOK_UNLIKELY(hot_line.ucx_bridge.load(std::memory_order_acquire));
}

// Call only where ucx_bridge_on() said so. Kinds UCX gives no memory type
// (a physical VMM handle, a registration of the program's own host memory,
// a pool or an address reservation) are not dispatched.
void tell_ucx_of_free(MemoryKind kind, uint64_t addr, uint64_t size);
void tell_ucx_of_alloc(MemoryKind kind, uint64_t addr, uint64_t size);

} // namespace gdrhook
