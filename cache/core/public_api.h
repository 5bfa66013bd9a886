// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Where include/gdrhook.h finds its registration cache: the process's
// (core/process_cache.h), or one a test installs instead.
#pragma once

namespace gdrhook {

class RegistrationCache;

// Overrides the runtime's cache (tests); nullptr goes back to it.
void set_public_cache_for_testing(RegistrationCache *cache);

} // namespace gdrhook
