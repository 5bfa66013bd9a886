// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The intercepted entry points as data: names, the cuGetProcAddress version
// each one answers, and the wrapper to hand out for each resolution path.
#pragma once

#include "cache/events/event.h"
#include "hook/entry_points.h"

#include <optional>

namespace gdrhook {

struct EntryInfo {
    EntryId id;
    const char *symbol; // exported name
    const char *base;   // cuGetProcAddress name (driver entries)
    int version;        // first CUDA version answered with this symbol
    bool per_thread;    // the _ptsz variant
    bool runtime;       // a libcudart entry point
    void *wrappers[4];  // indexed by Via (symbol and dlsym: the export)
};

const EntryInfo &entry_info(EntryId id);

// The entry exported under `symbol`, if we intercept it.
const EntryInfo *find_entry_by_symbol(const char *symbol);

// The driver entry cuGetProcAddress(base, version, flags) answers with.
const EntryInfo *find_entry_for_proc_address(const char *base, int version, bool per_thread);

// If `function` is one of our wrappers (for any path), its entry.
const EntryInfo *entry_for_wrapper(const void *function);

} // namespace gdrhook
