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

// gdrhook_get and gdrhook_put, or null without the shim.
struct ShimRegistrationApi {
    int (*get)(const void *, size_t, gdrhook_registration *);
    int (*put)(gdrhook_registration *);
};
inline const ShimRegistrationApi &shim_registration_api()
{
    static const ShimRegistrationApi api{
        reinterpret_cast<decltype(ShimRegistrationApi::get)>(dlsym(RTLD_DEFAULT, "gdrhook_get")),
        reinterpret_cast<decltype(ShimRegistrationApi::put)>(dlsym(RTLD_DEFAULT, "gdrhook_put"))};
    return api;
}

// Registers [p, p + size) and keeps the registration in @p held.
inline Registered hold_with_shim(CUdeviceptr p, size_t size,
                                 std::vector<gdrhook_registration> &held)
{
    const ShimRegistrationApi &api = shim_registration_api();
    if (!api.get || !api.put)
        return Registered::no_shim;
    gdrhook_registration reg;
    if (api.get(reinterpret_cast<const void *>(p), size, &reg) != 0)
        return Registered::refused;
    held.push_back(reg);
    return Registered::yes;
}

// Releases what hold_with_shim() kept.
inline void release_held(std::vector<gdrhook_registration> &held)
{
    for (gdrhook_registration &reg : held)
        shim_registration_api().put(&reg); // held only where put was found
    held.clear();
}

// Registers [p, p + size) and releases the registration at once.
inline Registered register_with_shim(CUdeviceptr p, size_t size)
{
    std::vector<gdrhook_registration> held;
    const Registered answer = hold_with_shim(p, size, held);
    release_held(held);
    return answer;
}
