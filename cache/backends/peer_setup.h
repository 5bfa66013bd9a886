// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What device memory needs before a peer device reads or writes it:
// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (base/driver_api.h), which both GPU
// backends set, at the pin of a library's miss or at the first library's
// get of a pin made on the shim's own initiative (docs/design.md).
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/base/capture.h"
#include "cache/base/driver_api.h"
#include "cache/base/status.h"

namespace gdrhook {

inline Status set_up_for_peer(const DriverApi &driver, uint64_t addr)
{
    // A call a stream capture prohibits: made now it would fail and
    // invalidate the application's capture (base/capture.h).
    if (capture_in_progress())
        return Status::error(StatusCode::unsupported, 0,
                             "a stream capture is in progress: SYNC_MEMOPS waits for its end");
    if (int rc = set_sync_memops(driver, addr); rc != cuda::success)
        return Status::error(rc == cuda::error_out_of_memory ? StatusCode::no_space
                                                             : StatusCode::invalid,
                             rc, "cuPointerSetAttribute(SYNC_MEMOPS) failed");
    return Status::success();
}

// At a pin of memory that needs it before a peer uses it (`needs_setup`):
// set up now, or, for a pin on the shim's own initiative, marked in `out`
// for the first library that asks for the pin (prepare_for_peer).
inline Status set_up_or_defer(const DriverApi &driver, uint64_t addr, bool needs_setup, Pin &out)
{
    out.peer_setup_deferred = needs_setup && pinning_on_own_initiative;
    if (needs_setup && !out.peer_setup_deferred)
        return set_up_for_peer(driver, addr);
    return Status::success();
}

} // namespace gdrhook
