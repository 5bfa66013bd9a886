// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libnext_spy.so: another LD_PRELOAD interposer, written the conventional
// way. It defines every entry point of
// hook/entry_points.h, counts each call and jumps to what
// dlsym(RTLD_NEXT, name) answered when it was loaded (or, with
// NEXT_SPY_RESOLVE=handle, dlsym on libcuda's handle). Preloaded after the
// shim it must see every call the shim forwards; before it, every call the
// program makes through the exported symbols.
//
// At exit it prints `next_spy_missed=N`: over the driver entry points, the
// calls the fake driver counted that did not pass through the spy (and the
// other way round), with a line for each entry point where they differ;
// and `next_spy.NAME=N` for each entry point it saw called.
#include "hook/entry_points.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

extern "C" {
#define SPY_SLOTS(symbol, ...)                                                                     \
    __attribute__((visibility("hidden"))) unsigned long spy_calls_##symbol;                        \
    __attribute__((visibility("hidden"))) void *spy_next_##symbol;
GDRHOOK_DRIVER_ENTRY_POINTS(SPY_SLOTS)
GDRHOOK_RUNTIME_ENTRY_POINTS(SPY_SLOTS)
#undef SPY_SLOTS
}

// Each entry point: count, then jump with the caller's arguments untouched.
#if defined(__x86_64__)
#define SPY_STUB(symbol, ...)                                                                      \
    asm(".text\n"                                                                                  \
        ".globl " #symbol "\n"                                                                     \
        ".type " #symbol ", @function\n" #symbol ":\n"                                             \
        "    endbr64\n"                                                                            \
        "    lock incq spy_calls_" #symbol "(%rip)\n"                                              \
        "    jmp *spy_next_" #symbol "(%rip)\n"                                                    \
        ".size " #symbol ", .-" #symbol "\n");
#elif defined(__aarch64__)
// x9, x16 and x17 are scratch at a call (not arguments); x0-x8 are left
// as the caller set them.
#define SPY_STUB(symbol, ...)                                                                      \
    asm(".text\n"                                                                                  \
        ".globl " #symbol "\n"                                                                     \
        ".type " #symbol ", %function\n"                                                           \
        ".p2align 2\n" #symbol ":\n"                                                               \
        "    adrp x16, spy_calls_" #symbol "\n"                                                    \
        "    add x16, x16, :lo12:spy_calls_" #symbol "\n"                                          \
        "1:  ldxr x17, [x16]\n"                                                                    \
        "    add x17, x17, #1\n"                                                                   \
        "    stxr w9, x17, [x16]\n"                                                                \
        "    cbnz w9, 1b\n"                                                                        \
        "    adrp x16, spy_next_" #symbol "\n"                                                     \
        "    ldr x16, [x16, :lo12:spy_next_" #symbol "]\n"                                         \
        "    br x16\n"                                                                             \
        ".size " #symbol ", .-" #symbol "\n");
#else
#error "the spy's stubs are written for x86-64 and aarch64"
#endif
GDRHOOK_DRIVER_ENTRY_POINTS(SPY_STUB)
GDRHOOK_RUNTIME_ENTRY_POINTS(SPY_STUB)
#undef SPY_STUB

namespace {

// NEXT_SPY_RESOLVE=handle: the driver's functions are looked up on
// libcuda's handle instead, as some interposers do.
__attribute__((constructor)) void resolve_next()
{
    const char *how = getenv("NEXT_SPY_RESOLVE");
    void *driver = how && strcmp(how, "handle") == 0
                       ? dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)
                       : RTLD_NEXT;
#define SPY_RESOLVE_DRIVER(symbol, ...) spy_next_##symbol = dlsym(driver, #symbol);
#define SPY_RESOLVE_RUNTIME(symbol, ...) spy_next_##symbol = dlsym(RTLD_NEXT, #symbol);
    GDRHOOK_DRIVER_ENTRY_POINTS(SPY_RESOLVE_DRIVER)
    GDRHOOK_RUNTIME_ENTRY_POINTS(SPY_RESOLVE_RUNTIME)
#undef SPY_RESOLVE_DRIVER
#undef SPY_RESOLVE_RUNTIME
}

__attribute__((destructor)) void report()
{
    auto driver_count =
        reinterpret_cast<long (*)(const char *)>(dlsym(RTLD_DEFAULT, "fake_cuda_call_count"));
    if (!driver_count)
        return;
    long missed = 0;
#define SPY_COMPARE(symbol, ...)                                                                   \
    {                                                                                              \
        long seen = static_cast<long>(__atomic_load_n(&spy_calls_##symbol, __ATOMIC_RELAXED));     \
        long driver = driver_count(#symbol);                                                       \
        if (seen != driver)                                                                        \
            fprintf(stderr, "next_spy: %s passed the spy %ld times, the driver %ld\n", #symbol,    \
                    seen, driver);                                                                 \
        missed += labs(seen - driver);                                                             \
        if (seen)                                                                                  \
            fprintf(stderr, "next_spy.%s=%ld\n", #symbol, seen);                                   \
    }
    GDRHOOK_DRIVER_ENTRY_POINTS(SPY_COMPARE)
#undef SPY_COMPARE
    fprintf(stderr, "next_spy_missed=%ld\n", missed);
#define SPY_PRINT(symbol, ...)                                                                     \
    if (long seen = static_cast<long>(__atomic_load_n(&spy_calls_##symbol, __ATOMIC_RELAXED)))     \
        fprintf(stderr, "next_spy.%s=%ld\n", #symbol, seen);
    GDRHOOK_RUNTIME_ENTRY_POINTS(SPY_PRINT)
#undef SPY_PRINT
}

} // namespace
