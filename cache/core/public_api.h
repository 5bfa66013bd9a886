// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Where include/gdrhook.h finds the process's registration cache. The shim's
// runtime defines gdrhook_public_cache() (created on first use, like the
// rest of the runtime); tests install a cache of their own instead.
#pragma once

namespace gdrhook {

class RegistrationCache;

// Overrides the runtime's cache (tests); nullptr goes back to it.
void set_public_cache_for_testing(RegistrationCache *cache);

} // namespace gdrhook

// Defined by the runtime (weak here, so the cache library links without it):
// the process's cache, or null when gdrhook is disabled.
extern "C" gdrhook::RegistrationCache *gdrhook_public_cache() __attribute__((weak));
