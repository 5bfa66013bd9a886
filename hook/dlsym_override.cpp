// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The dlsym resolution path. The exported dlsym (dlsym_trampoline.S) asks
// gdrhook_dlsym_target where to jump; names we do not intercept, and every
// RTLD_NEXT lookup, go straight to glibc, untouched, so this path costs
// other lookups a few compares.
//
// The rule (docs/interposition.md): what we answer for an interposed name
// is on the program's call path. An answer that reaches the shim anyway
// (our export, or an interposer loaded before us, which chains to it) is
// handed out as glibc found it; one that would go around the shim (the
// driver's own function, found on libcuda's handle or on the handle of a
// library that links it, as UCX's CUDA module asks) is replaced by our
// exported wrapper: the very function the program's direct calls reach and
// the one cuGetProcAddress answers call, so a library that patches or calls
// the answer sees every call, and the wrapper forwards to the next
// definition after us. RTLD_NEXT is left to glibc because only glibc knows
// the caller: an interposer after us asks for it to forward to what comes
// after it, and handing it our wrapper would be an endless loop. For the
// same reason an interposer after us that looks the driver up on a handle
// (it defines the name it asks for) gets glibc's answer.
#include "cache/notify/alloc_subscribers.h"
#include "hook/entry_table.h"
#include "hook/real_functions.h"
#include "hook/runtime_start.h"

#include <dlfcn.h>
#include <link.h>

using namespace gdrhook;

namespace {

void *null_dlsym(void *, const char *)
{
    return nullptr;
}

struct link_map *link_map_of(const void *address)
{
    Dl_info info;
    struct link_map *map = nullptr;
    if (!dladdr1(address, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP))
        return nullptr;
    return map;
}

struct link_map *our_link_map()
{
    return link_map_of(reinterpret_cast<const void *>(&null_dlsym));
}

bool loaded_before_us(const struct link_map *theirs)
{
    struct link_map *ours = our_link_map();
    if (!theirs || !ours)
        return false;
    for (struct link_map *map = ours->l_prev; map; map = map->l_prev)
        if (map == theirs)
            return true;
    return false;
}

// Whether `function` belongs to an object loaded before this library (the
// program, or an LD_PRELOAD library named before us): the program's calls
// reach it first, and it forwards to us.
bool defined_before_us(const void *function)
{
    return loaded_before_us(link_map_of(function));
}

// Whether the code at `caller` belongs to an interposer of `name` loaded
// after us: an object that itself defines `name`. It asks in order to
// forward to what comes after it, and our wrapper forwards to it.
bool caller_interposes_after_us(const void *caller, const char *name, DlsymFunction glibc)
{
    struct link_map *theirs = link_map_of(caller);
    if (!theirs || theirs == our_link_map() || loaded_before_us(theirs))
        return false;
    void *handle = dlopen(theirs->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return false;
    void *own = glibc(handle, name);
    dlclose(handle);
    return own && link_map_of(own) == theirs;
}

} // namespace

extern "C" __attribute__((visibility("hidden"))) void *gdrhook_dlsym_intercepted(void *handle,
                                                                                 const char *name)
{
    DlsymFunction glibc = real_dlsym();
    void *found = glibc ? glibc(handle, name) : nullptr;
    const EntryInfo *entry = find_entry_by_symbol(name);
    if (!found || !entry || !hook_enabled())
        return found;
    // A library that looks the driver up may have brought UCX with it (its
    // CUDA module does this as it loads): a slow path, where a subscriber
    // waiting for a library (the UCX bridge, for libucm) looks again.
    tell_libraries_may_have_loaded();
    void *ours = entry->wrappers[static_cast<int>(Via::dlsym)];
    // Entered by a jump from the exported dlsym: the return address is the
    // application's.
    const void *caller = __builtin_return_address(0);
    if (found == ours || defined_before_us(found) ||
        caller_interposes_after_us(caller, name, glibc))
        return found;
    remember_real_function_if_none(entry->id, found);
    return ours;
}

extern "C" __attribute__((visibility("hidden"))) void *gdrhook_dlsym_target(void *handle,
                                                                            const char *name)
{
    if (handle != RTLD_NEXT && name && name[0] == 'c' && name[1] == 'u' &&
        find_entry_by_symbol(name))
        return reinterpret_cast<void *>(&gdrhook_dlsym_intercepted);
    DlsymFunction glibc = real_dlsym();
    return reinterpret_cast<void *>(glibc ? glibc : &null_dlsym);
}
