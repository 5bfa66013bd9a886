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
// page), thread_state.h (per-thread state without the GOT), event_clock.h
// (the TSC instead of the vDSO's pages) and GDRHOOK_HOT_ENTRY_POINTS (only
// the wrappers called over and over on these pages).
#pragma once

#define GDRHOOK_HOT __attribute__((hot))

// The same for the globals those functions read: one section, so that they
// share a page of .data rather than spreading over .data, .bss and the
// read-only relocated data.
// Hidden also where only declared: the code then reaches them directly,
// not through the GOT (another line, on another page).
#define GDRHOOK_HOT_DATA __attribute__((section(".data.gdrhook_hot"), visibility("hidden")))
