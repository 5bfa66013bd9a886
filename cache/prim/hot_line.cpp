// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/prim/hot_line.h"

namespace gdrhook {

// Constant-initialized: nothing runs at load time.
GDRHOOK_HOT_DATA HotLine hot_line;

} // namespace gdrhook
