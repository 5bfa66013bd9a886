// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Where each wrapper finds the function it forwards to: the next definition
// after us in the lookup order (dlsym(RTLD_NEXT) from here), so that an
// interposer preloaded after us is on the chain; for a driver entry point
// not found that way, libcuda's own. Only when neither exists (a runtime
// the program dlopen()ed privately) does the function a resolution path
// found (a dlsym or cuGetProcAddress answer) fill the slot.
#pragma once

#include "cache/prim/hot_path.h"
#include "hook/entry_points.h"

#include <atomic>

namespace gdrhook {

using DlsymFunction = void *(*)(void *, const char *);

// glibc's dlsym, found with dlvsym(RTLD_NEXT, "dlsym", ...).
DlsymFunction real_dlsym();

// The handle of the libcuda the application uses (loaded on demand).
void *libcuda_handle();

// Filled once each, then only read. The hot entries' slots are hot data
// (hot_path.h): the wrappers called over and over read a line or two of
// slots, not the whole table.
extern GDRHOOK_HOT_DATA std::atomic<void *> hot_real_slots[hot_entry_count];
extern std::atomic<void *> real_slots[entry_count];

inline std::atomic<void *> &real_slot(EntryId id)
{
    const int hot = hot_index(id);
    return hot >= 0 ? hot_real_slots[hot] : real_slots[static_cast<int>(id)];
}

// The first call of an entry point: looks its real function up.
void *find_real_function(EntryId id);

inline void *real_function(EntryId id)
{
    void *function = real_slot(id).load(std::memory_order_acquire);
    if (GDRHOOK_LIKELY(function != nullptr))
        return function;
    return find_real_function(id);
}

// Fills the slot with `function` if no real function is found otherwise.
void remember_real_function_if_none(EntryId id, void *function);

} // namespace gdrhook

// The typed real function of an exported wrapper name.
#define GDRHOOK_REAL(symbol)                                                                       \
    reinterpret_cast<decltype(&::symbol)>(::gdrhook::real_function(::gdrhook::EntryId::symbol))
