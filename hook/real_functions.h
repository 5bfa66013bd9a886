// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Where each wrapper finds the function it forwards to. A slot is filled by
// whichever path sees the real function first: the application's dlsym or
// cuGetProcAddress answer (the pointer the driver handed out), or, for a
// program that calls our exported symbol, a lookup in libcuda (driver
// entries) or after us in the search order (runtime entries).
#pragma once

#include "cache/hot_path.h"
#include "hook/entry_points.h"

namespace gdrhook {

using DlsymFunction = void *(*)(void *, const char *);

// glibc's dlsym, found with dlvsym(RTLD_NEXT, "dlsym", ...).
DlsymFunction real_dlsym();

// The handle of the libcuda the application uses (loaded on demand).
void *libcuda_handle();

GDRHOOK_HOT void *real_function(EntryId id);
void remember_real_function(EntryId id, void *function);

} // namespace gdrhook

// The typed real function of an exported wrapper name.
#define GDRHOOK_REAL(symbol)                                                   \
    reinterpret_cast<decltype(&::symbol)>(                                    \
        ::gdrhook::real_function(::gdrhook::EntryId::symbol))
