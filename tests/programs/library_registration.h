// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What a communication library does with a buffer before it sends from it:
// asks the shim for its registration (include/gdrhook.h), found at run time
// so that the same program runs without the shim.
#pragma once

#include "include/gdrhook.h"

#include <cuda.h>
#include <dlfcn.h>

#include <vector>

enum class Registered { no_shim, refused, yes };

// Registers [p, p + size) and keeps the registration in @p held.
inline Registered hold_with_shim(CUdeviceptr p, size_t size, std::vector<gdrhook_registration> &held)
{
    using Get = int (*)(const void *, size_t, gdrhook_registration *);
    static auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    if (!get)
        return Registered::no_shim;
    gdrhook_registration reg;
    if (get(reinterpret_cast<const void *>(p), size, &reg) != 0)
        return Registered::refused;
    held.push_back(reg);
    return Registered::yes;
}

// Releases what hold_with_shim() kept.
inline void release_held(std::vector<gdrhook_registration> &held)
{
    using Put = int (*)(gdrhook_registration *);
    static auto put = reinterpret_cast<Put>(dlsym(RTLD_DEFAULT, "gdrhook_put"));
    for (gdrhook_registration &reg : held)
        if (put)
            put(&reg);
    held.clear();
}

// Registers [p, p + size) and releases the registration at once.
inline Registered register_with_shim(CUdeviceptr p, size_t size)
{
    using Get = int (*)(const void *, size_t, gdrhook_registration *);
    using Put = int (*)(gdrhook_registration *);
    static auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "gdrhook_get"));
    static auto put = reinterpret_cast<Put>(dlsym(RTLD_DEFAULT, "gdrhook_put"));
    if (!get || !put)
        return Registered::no_shim;
    gdrhook_registration reg;
    if (get(reinterpret_cast<const void *>(p), size, &reg) != 0)
        return Registered::refused;
    put(&reg);
    return Registered::yes;
}
