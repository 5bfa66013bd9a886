// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Built instead of ucx_rcache.cpp when meson does not find UCX.
#include "lookup_caches.h"

namespace bench {

std::unique_ptr<LookupCache> make_ucx_cache(std::string &why)
{
    why = "built without UCX (Debian: apt-get install libucx-dev)";
    return nullptr;
}

} // namespace bench
