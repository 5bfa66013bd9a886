// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "hook/real_functions.h"

#include "hook/entry_table.h"

#include <atomic>
#include <dlfcn.h>

namespace gdrhook {
namespace {

std::atomic<DlsymFunction> glibc_dlsym{nullptr};
std::atomic<void *> libcuda{nullptr};

void remember_real_function(EntryId id, void *function)
{
    void *expected = nullptr;
    real_slot(id).compare_exchange_strong(expected, function, std::memory_order_acq_rel);
}

// Never forward to ourselves (possible if libcuda is our test double linked
// without -Bsymbolic, or a second copy of the shim is loaded).
void *unless_ours(void *function)
{
    return function && entry_for_wrapper(function) ? nullptr : function;
}

} // namespace

GDRHOOK_HOT_DATA std::atomic<void *> hot_real_slots[hot_entry_count];
std::atomic<void *> real_slots[entry_count];

DlsymFunction real_dlsym()
{
    DlsymFunction found = glibc_dlsym.load(std::memory_order_acquire);
    if (found)
        return found;
    // dlvsym is not interposed, so this call reaches glibc; RTLD_NEXT from
    // here means "after this library", which is glibc's own dlsym.
    void *symbol = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!symbol)
        symbol = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    found = reinterpret_cast<DlsymFunction>(symbol);
    glibc_dlsym.store(found, std::memory_order_release);
    return found;
}

void *libcuda_handle()
{
    void *handle = libcuda.load(std::memory_order_acquire);
    if (handle)
        return handle;
    // Normally already loaded by the application; otherwise load it the way
    // the runtime would, so a wrapper called first still forwards.
    handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (handle)
        libcuda.store(handle, std::memory_order_release);
    return handle;
}

void *find_real_function(EntryId id)
{
    std::atomic<void *> &slot = real_slot(id);
    void *function = nullptr;
    const EntryInfo &info = entry_info(id);
    DlsymFunction lookup = real_dlsym();
    if (!lookup)
        return nullptr;
    // The next definition after us in the lookup order: another interposer
    // preloaded after us, or the driver or runtime the program links, so
    // that whatever comes after us sees the call too. A libcuda the program
    // or the runtime dlopen()ed privately is not in that order; then its
    // own function.
    function = unless_ours(lookup(RTLD_NEXT, info.symbol));
    if (!function && !info.runtime)
        if (void *handle = libcuda_handle())
            function = unless_ours(lookup(handle, info.symbol));
    if (function)
        remember_real_function(id, function);
    return slot.load(std::memory_order_acquire);
}

void remember_real_function_if_none(EntryId id, void *function)
{
    if (!real_function(id) && !entry_for_wrapper(function))
        remember_real_function(id, function);
}

} // namespace gdrhook
