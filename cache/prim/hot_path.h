// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Marks the functions an allocation or a free runs through. GCC puts them
// into .text.hot, which the linker lays out together: the whole path then
// spans a page or two of code instead of a dozen. On a real GPU the driver
// runs for ~100 us between two calls of the shim and evicts its lines and
// TLB entries (on a virtual machine a TLB miss walks two page tables), so
// the shim's cost per call is mostly the pages and lines it touches, not
// the instructions it runs. Measured with tests/gpu/alloc_free_ab.
//
// The same reason is behind hot_arena.h (the hot objects on one huge
// page), hot_line.h (the globals every call reads, on one line),
// thread_state.h (per-thread state without the GOT), event_clock.h (the
// TSC instead of the vDSO's pages), GDRHOOK_HOT_ENTRY_POINTS (only the
// wrappers called over and over on these pages), and the inline fast
// paths with their slow cases out of line (recorder.h, event_pipeline.h,
// alloc_tracker.h). tools/bench has no counter for lines; valgrind's
// lackey over one alloc/free pair against the fake driver counts them.
#pragma once

#define GDRHOOK_HOT __attribute__((hot, aligned(64)))

// For the branches of the hot functions: what is rare goes to the end of
// the function (or to .text.unlikely), so that the common path runs
// through as few lines as possible.
#define GDRHOOK_LIKELY(x) __builtin_expect(!!(x), 1)
#define GDRHOOK_UNLIKELY(x) __builtin_expect(!!(x), 0)

// The same for the globals those functions read: one section, so that they
// share a page of .data rather than spreading over .data, .bss and the
// read-only relocated data.
// Hidden also where only declared: the code then reaches them directly,
// not through the GOT (another line, on another page).
#define GDRHOOK_HOT_DATA __attribute__((section(".data.gdrhook_hot"), visibility("hidden")))

// Thread-locals of the shim use the initial-exec model: the shim is loaded
// at start-up (LD_PRELOAD or a link dependency), so its few bytes live in
// static TLS and every access is one instruction, not a __tls_get_addr call.
#define GDRHOOK_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))
