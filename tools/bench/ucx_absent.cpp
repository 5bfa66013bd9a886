// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Built instead of ucx_rcache.cpp when meson does not find UCX.
#include "lookup_caches.h"

namespace bench {

gdrhook::Result<std::unique_ptr<LookupCache>> make_ucx_cache()
{
    return gdrhook::Result<std::unique_ptr<LookupCache>>::failure(
        gdrhook::Status::error(gdrhook::StatusCode::unsupported, 0, "no UCX"),
        "built without UCX (Debian: apt-get install libucx-dev)");
}

} // namespace bench
