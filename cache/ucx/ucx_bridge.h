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
//   - of each allocation, after it succeeded (UCM_EVENT_MEM_TYPE_ALLOC), as
//     the first subscriber to allocations (notify/alloc_subscribers.h,
//     before pin-on-alloc).
// A thread that is inside a dispatch of ours (UCX's handlers may call
// CUDA) dispatches nothing more.
//
// When: at the first CUDA call if libucm is loaded then (GDRHOOK_UCX=on
// loads it), else at the first look after it was loaded: the hook's slow
// paths (a dlsym lookup of a CUDA name, as UCX's CUDA module makes when it
// loads) tell the allocation subscribers that libraries may have loaded,
// and the bridge looks again; never on an allocation or a free. Those test
// the subscribers' bits on the hot line (hot_line.h), which they read
// anyway.
#pragma once

#include "cache/base/config.h"
#include "cache/events/event.h"
#include "cache/notify/alloc_subscribers.h"
#include "cache/notify/free_subscribers.h"

#include <cstdint>

namespace gdrhook {

// The bridge as a subscriber to frees and to allocations. It listens to
// both from the moment libucm is found: the places it was given are handed
// to set_up_ucx_bridge().
FreeSubscriber ucx_free_subscriber();
AllocSubscriber ucx_alloc_subscriber();

// The runtime's, once, at start, after subscribing the two above.
void set_up_ucx_bridge(UcxBridgeMode mode, FreeSubscription free_place,
                       AllocSubscription alloc_place);

// A slow path of the hook (the allocation subscriber's
// libraries_may_have_loaded): libraries may have been loaded since the
// last look. Cheap when none was (ucm_library.h).
void look_again_for_ucx();

// Called only once the bridge listens. Kinds UCX gives no memory type (a
// physical VMM handle, a registration of the program's own host memory, a
// pool or an address reservation) are not dispatched.
void tell_ucx_of_free(MemoryKind kind, uint64_t addr, uint64_t size);
void tell_ucx_of_alloc(MemoryKind kind, uint64_t addr, uint64_t size);

} // namespace gdrhook
