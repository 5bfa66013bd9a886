// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/descriptor_budget.h"

#include <sys/resource.h>

namespace gdrhook {

uint64_t descriptor_budget(uint64_t soft_limit)
{
    if (soft_limit == 0)
        return 0;
    const uint64_t budget = soft_limit / 8;
    return budget ? budget : 1;
}

uint64_t soft_descriptor_limit()
{
    rlimit limit = {};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return 0;
    return static_cast<uint64_t>(limit.rlim_cur);
}

} // namespace gdrhook
