// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Defines one interposed entry point: a hidden implementation
// gdrhook_impl_<name> that the tables and thunks point at, and the exported
// <name> as an alias of it. Calls inside the shim always reach the
// implementation directly, whatever else in the process defines <name>.
// Never inlined: the thunks handed out by cuGetProcAddress must call the
// exported address, which dlsym hands out and a library may patch
// (docs/interposition.md).
#pragma once

#include "cache/prim/hot_path.h"

#include "cache/record/recorder.h"
#include "hook/cuda_api.h"
#include "hook/real_functions.h"
#include "hook/runtime_start.h"
#include "hook/via_scope.h"

#define GDRHOOK_WRAPPER(ret, name, params) GDRHOOK_WRAPPER_LAID_OUT(false, , ret, name, params)

// For the entries of GDRHOOK_HOT_ENTRY_POINTS (checked at compile time).
#define GDRHOOK_HOT_WRAPPER(ret, name, params)                                                     \
    GDRHOOK_WRAPPER_LAID_OUT(true, GDRHOOK_HOT, ret, name, params)

#define GDRHOOK_WRAPPER_LAID_OUT(hot, hot_attribute, ret, name, params)                            \
    static_assert(::gdrhook::is_hot_entry(::gdrhook::EntryId::name) == hot,                        \
                  #name ": GDRHOOK_HOT_WRAPPER if and only if in GDRHOOK_HOT_ENTRY_POINTS");       \
    extern "C" __attribute__((visibility("hidden"), noinline))                                     \
    hot_attribute ret gdrhook_impl_##name params;                                                  \
    extern "C" __attribute__((visibility("default"), alias("gdrhook_impl_" #name)))                \
    hot_attribute ret name params;                                                                 \
    extern "C" ret gdrhook_impl_##name params

// Every wrapper starts here. A library may patch the exported address with
// a 5-byte jump and run the bytes it covers from a copy (UCX's bistro
// mode), which only works for a few instructions. Built with frame pointers
// and without shrink-wrapping (hook/meson.build), a wrapper begins
// `push %rbp; mov %rsp, %rbp` (4 bytes) and then saves the callee-saved
// registers it uses; this makes it use %rbx, so that the fifth byte is a
// `push` too (tests/shim/test_patchable_entry_points.cpp).
// On aarch64 every instruction is 4 bytes, so a patch never splits one;
// UCX's aarch64 bistro (five instructions: movz/movk x15, br x15) is not
// known to relocate what it covers, and no test here patches an aarch64
// wrapper: nothing is asked of the prologue.
#if defined(__x86_64__)
#define GDRHOOK_PATCHABLE_PROLOGUE() asm volatile("" ::: "rbx")
#elif defined(__aarch64__)
#define GDRHOOK_PATCHABLE_PROLOGUE() (void)0
#else
#error "gdrhook supports x86-64 and aarch64 (hook/wrapper.h)"
#endif

// The result a wrapper returns when the real function cannot be found (the
// application reached the wrapper without libcuda or libcudart loadable).
#define GDRHOOK_REAL_OR_RETURN(fn, symbol, missing)                                                \
    GDRHOOK_PATCHABLE_PROLOGUE();                                                                  \
    auto fn = GDRHOOK_REAL(symbol);                                                                \
    if (GDRHOOK_UNLIKELY(fn == nullptr))                                                           \
    return missing
