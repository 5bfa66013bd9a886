// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The hook starts the shim's runtime on the first call that needs it and
// hands it the driver queries answered by the real libcuda
// (hook/driver_queries.cpp). Below the hook nothing starts anything: the
// recorder records only once runtime_running() says so.
#pragma once

#include "cache/core/runtime.h"
#include "cache/prim/hot_line.h"

namespace gdrhook {

const DriverQueries &hook_driver_queries();

// True when the shim records (starting it on the first call); false with
// GDRHOOK_DISABLE=1, when every wrapper only forwards.
inline bool hook_enabled()
{
    if (runtime_running())
        return true;
    return start_runtime(hook_driver_queries());
}

} // namespace gdrhook
