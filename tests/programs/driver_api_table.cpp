// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "driver_api_table.h"

#include <cstdio>

bool fill_by_base_name(DriverApi &api, BaseNameLookup lookup)
{
    bool ok = true;
#define FILL(field, base, symbol, ptsz)                                       \
    api.field = reinterpret_cast<decltype(api.field)>(lookup(#base, ptsz));   \
    if (!api.field) {                                                         \
        fprintf(stderr, "cannot resolve %s\n", #base);                       \
        ok = false;                                                           \
    }
    FIELDS(FILL)
#undef FILL
    return ok;
}

bool fill_by_symbol(DriverApi &api, SymbolLookup lookup)
{
    bool ok = true;
#define FILL(field, base, symbol, ptsz)                                       \
    api.field = reinterpret_cast<decltype(api.field)>(lookup(#symbol));       \
    if (!api.field) {                                                         \
        fprintf(stderr, "cannot resolve %s\n", #symbol);                     \
        ok = false;                                                           \
    }
    FIELDS(FILL)
#undef FILL
    return ok;
}
