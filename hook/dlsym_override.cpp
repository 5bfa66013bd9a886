// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The dlsym resolution path. The exported dlsym (dlsym_trampoline.S) asks
// gdrhook_dlsym_target where to jump; names we do not intercept go straight
// to glibc, untouched, so this path costs other lookups two compares.
#include "hook/runtime_start.h"
#include "hook/entry_table.h"
#include "hook/real_functions.h"

#include <dlfcn.h>

using namespace gdrhook;

namespace {

void *null_dlsym(void *, const char *)
{
    return nullptr;
}

} // namespace

extern "C" __attribute__((visibility("hidden"))) void *
gdrhook_dlsym_intercepted(void *handle, const char *name)
{
    DlsymFunction glibc = real_dlsym();
    void *found = glibc ? glibc(handle, name) : nullptr;
    const EntryInfo *entry = find_entry_by_symbol(name);
    if (!found || !entry)
        return found;
    // RTLD_DEFAULT and handles of objects that depend on us find our own
    // export: that is already the wrapper.
    if (const EntryInfo *ours = entry_for_wrapper(found))
        return ours->wrappers[static_cast<int>(Via::dlsym)];
    remember_real_function(entry->id, found);
    if (!hook_enabled())
        return found;
    return entry->wrappers[static_cast<int>(Via::dlsym)];
}

extern "C" __attribute__((visibility("hidden"))) void *
gdrhook_dlsym_target(const char *name)
{
    if (name && name[0] == 'c' && name[1] == 'u' && find_entry_by_symbol(name))
        return reinterpret_cast<void *>(&gdrhook_dlsym_intercepted);
    DlsymFunction glibc = real_dlsym();
    return reinterpret_cast<void *>(glibc ? glibc : &null_dlsym);
}
