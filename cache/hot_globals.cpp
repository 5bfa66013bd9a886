// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/hot_globals.h"

namespace gdrhook {

// Constant-initialized: nothing runs at load time.
GDRHOOK_HOT_DATA HotGlobals hot_globals;

} // namespace gdrhook
