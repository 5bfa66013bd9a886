// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "hook/entry_table.h"

#include "hook/cuda_api.h"
#include "hook/via_scope.h"

#include <cstring>

// The wrappers' implementations (hook/*_wrappers.cpp), one per entry.
extern "C" {
#define GDRHOOK_DECLARE_IMPL(symbol, ...) decltype(::symbol) gdrhook_impl_##symbol;
GDRHOOK_DRIVER_ENTRY_POINTS(GDRHOOK_DECLARE_IMPL)
GDRHOOK_RUNTIME_ENTRY_POINTS(GDRHOOK_DECLARE_IMPL)
#undef GDRHOOK_DECLARE_IMPL
}

namespace gdrhook {
namespace {

template <typename F, F *impl, bool hot>
constexpr EntryInfo make_entry(EntryId id, const char *symbol, const char *base, int version,
                               bool per_thread, bool runtime)
{
    return EntryInfo{
        id,
        symbol,
        base,
        version,
        per_thread,
        runtime,
        {
            reinterpret_cast<void *>(impl),
            // dlsym hands out the exported wrapper itself: the function the
            // program's direct calls reach, which a library may patch
            // (docs/interposition.md). Its events say "symbol".
            reinterpret_cast<void *>(impl),
            reinterpret_cast<void *>(&ViaThunk<F, impl, Via::proc_address, hot>::call),
            reinterpret_cast<void *>(&ViaThunk<F, impl, Via::runtime_entry, hot>::call),
        },
    };
}

// One row per entry, in EntryId order (both come from the same table).
#define GDRHOOK_DRIVER_ROW(symbol, base, version, ptsz)                                            \
    make_entry<decltype(::symbol), &gdrhook_impl_##symbol, is_hot_entry(EntryId::symbol)>(         \
        EntryId::symbol, #symbol, #base, version, ptsz, false),
#define GDRHOOK_RUNTIME_ROW(symbol)                                                                \
    make_entry<decltype(::symbol), &gdrhook_impl_##symbol, is_hot_entry(EntryId::symbol)>(         \
        EntryId::symbol, #symbol, "", 0, false, true),

struct Table {
    EntryInfo rows[entry_count];
};

// Built on first use, not by a static initializer: a library preloaded after
// this one runs its constructors first and may call our dlsym from them (to
// find the functions it forwards to), and the wrappers' addresses are not
// constant expressions, so a table at namespace scope would still be zeros.
const Table &table()
{
    static const Table entries = {{GDRHOOK_DRIVER_ENTRY_POINTS(GDRHOOK_DRIVER_ROW)
                                       GDRHOOK_RUNTIME_ENTRY_POINTS(GDRHOOK_RUNTIME_ROW)}};
    return entries;
}

#undef GDRHOOK_DRIVER_ROW
#undef GDRHOOK_RUNTIME_ROW

} // namespace

const EntryInfo &entry_info(EntryId id)
{
    return table().rows[static_cast<int>(id)];
}

const EntryInfo *find_entry_by_symbol(const char *symbol)
{
    if (symbol[0] != 'c' || symbol[1] != 'u')
        return nullptr;
    for (const EntryInfo &entry : table().rows)
        if (strcmp(entry.symbol, symbol) == 0)
            return &entry;
    return nullptr;
}

const EntryInfo *find_entry_for_proc_address(const char *base, int version, bool per_thread)
{
    const EntryInfo *best = nullptr;
    for (const EntryInfo &entry : table().rows) {
        if (entry.runtime || entry.version > version || strcmp(entry.base, base) != 0)
            continue;
        // Functions without a per-thread variant answer either way; where
        // there is one, the flag picks it.
        bool better = !best || (entry.per_thread == per_thread && best->per_thread != per_thread) ||
                      (entry.per_thread == best->per_thread && entry.version > best->version);
        if (better)
            best = &entry;
    }
    return best;
}

const EntryInfo *entry_for_wrapper(const void *function)
{
    for (const EntryInfo &entry : table().rows)
        for (void *wrapper : entry.wrappers)
            if (wrapper == function)
                return &entry;
    return nullptr;
}

} // namespace gdrhook
