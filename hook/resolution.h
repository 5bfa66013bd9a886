// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Turning a real function pointer that a resolution path produced into the
// wrapper the application should get instead.
#pragma once

#include "cache/events/event.h"

namespace gdrhook {

// cuGetProcAddress(symbol, version, flags) produced `function`: return the
// wrapper for `via` (which forwards to the next definition, or to
// `function` where there is none), or `function` itself if we do not
// intercept it (or the shim is disabled).
void *interpose_proc_address(const char *symbol, int version, bool per_thread, void *function,
                             Via via);

} // namespace gdrhook
