// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The contract of the shim's speed techniques, and the index of where each
// lives; the rest of the code calls them and stays plain.
//
// Why: on a real GPU the driver runs for ~100 us between two calls of the
// shim and evicts its lines and TLB entries (on a virtual machine a TLB
// miss walks two page tables), so the cost of a call is mostly the cache
// lines and pages it touches, not the instructions it runs.
// tests/bench/hot_lines.py counts those lines for one alloc/free pair
// (valgrind's lackey against the fake driver); docs/performance.md says how
// the time is measured on a GPU.
//
// The techniques, all in cache/prim/ but the last four:
//  - GDRHOOK_HOT (below): the functions of an allocation or a free in
//    .text.hot, laid out together, each on its own line;
//  - GDRHOOK_LIKELY/UNLIKELY: the rare branches out of the common path;
//  - GDRHOOK_HOT_DATA: the globals those functions read in one section,
//    hidden so that they are reached without the GOT;
//  - GDRHOOK_THREAD_LOCAL: initial-exec TLS, one instruction an access;
//  - hot_line.h: every global a call reads on one cache line;
//  - hot_arena.h: the hot objects (runtime, queue cells, tracker tables)
//    on one huge page;
//  - asymmetric_fence.h: a store-load fence whose frequent half is a
//    compiler barrier (membarrier(2) on the rare side, the worker's), and
//    the holds' full fence, which spares a free's unpin that system call;
//  - spin_lock.h: the tracker's short critical sections;
//  - spin_then_sleep_mutex.h: every lock a free takes on the program's
//    thread (the registration cache's writer and reclaimer, the pointer
//    table's writer): no sleep, and no wake to wait for, while the holder
//    still runs;
//  - seqlock.h: lock-free reads of the pointer table and the page hash;
//  - cache/events/thread_state.h: per-thread state reached from the
//    thread pointer, without the GOT;
//  - cache/events/event_clock.h: the TSC instead of the vDSO's pages;
//  - hook/entry_points.h, GDRHOOK_HOT_ENTRY_POINTS: only the wrappers
//    called over and over sit on the hot pages;
//  - profile.h, ProfileTimerIf: the pair's paths compiled twice
//    (cache/record/recorder.cpp), so that a process without the profile
//    runs a copy with no timer code in it;
//  - cache/registration/thread_records.h, HitSlot::served(): a lookup
//    answered by the thread's hit cache is counted by the countdown it
//    makes anyway, not by a store to a counter every hit.
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

// The rare rest of a hot inline function, moved out of it: what stays
// inline then needs few registers and saves none.
#define GDRHOOK_NOINLINE __attribute__((noinline))
// The opposite, where GCC would call a small reader from its one caller:
// the call spills the caller's registers and hands the answer back
// through memory.
#define GDRHOOK_ALWAYS_INLINE __attribute__((always_inline)) inline

// Thread-locals of the shim use the initial-exec model: the shim is loaded
// at start-up (LD_PRELOAD or a link dependency), so its few bytes live in
// static TLS and every access is one instruction, not a __tls_get_addr call.
#define GDRHOOK_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))
