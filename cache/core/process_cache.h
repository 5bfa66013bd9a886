// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The process's registration cache: made on first need (a backend needs a
// driver with a context, so never at load time) with the backend the
// configuration asks for, and wired to the rest of the shim: the tracker
// widens lookups to whole allocations, the pin events go to the log, the
// worker unpins (cache/pinning/unpinner.h).
#pragma once

namespace gdrhook {

class RegistrationCache;
struct Runtime;

// The process's cache, created on the first call; null when GDRHOOK_PIN=off,
// the shim is disabled, or creation failed (said once on stderr).
RegistrationCache *process_cache();

// At exit: every registration leaves the cache, so that the worker's last
// drain unpins and logs each (reason teardown) before the log closes; then
// the statistics at info level.
void retire_process_cache_at_exit();
void print_process_cache_statistics();

// Around a fork: no release of a pin is in flight while it happens.
void process_cache_before_fork();
void process_cache_after_fork_in_parent();
// In a forked child, before anything else touches the cache.
void process_cache_after_fork_in_child();

} // namespace gdrhook
