// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Every backend, once: its kind and, in one row of a table, what it is to
// the rest of gdrhook. The GDRHOOK_BACKEND value that asks for it
// (config.h's Backend, whose names are the backend's words in the log and
// the doctor), what its registrations are to a library (include/gdrhook.h's
// GDRHOOK_REG_*) and, for a backend that pins through gdrhook.ko, the PIN
// it asks for (the uapi's enum gdrhook_backend: numbers of the module's
// ABI, mapped here, never renumbered). A new backend is a kind and a row;
// the build fails until the row is there, in the kind's order.
#pragma once

#include "cache/base/config.h"
#include "include/gdrhook.h"
#include "kmod/include/uapi/gdrhook_ioctl.h"

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace gdrhook {

enum class BackendKind : uint8_t {
    none,
    dmabuf,
    kmod,           // GPU memory through nv-p2p, by gdrhook.ko
    pin_user_pages, // an integrated GPU's host pages, by gdrhook.ko
    last = pin_user_pages
};

struct BackendRow {
    BackendKind kind;
    Backend setting;      // the GDRHOOK_BACKEND value that names it
    int32_t registration; // GDRHOOK_REG_*: what gdrhook_get() hands a library
    uint32_t module_pin;  // enum gdrhook_backend of its PIN; 0: not through the module
};

inline constexpr BackendRow backend_rows[] = {
    {BackendKind::none, Backend::none, GDRHOOK_REG_NONE, 0},
    {BackendKind::dmabuf, Backend::dmabuf, GDRHOOK_REG_DMABUF, 0},
    {BackendKind::kmod, Backend::kmod, GDRHOOK_REG_KMOD, GDRHOOK_BACKEND_NVP2P},
    {BackendKind::pin_user_pages, Backend::pin_user_pages, GDRHOOK_REG_KMOD,
     GDRHOOK_BACKEND_HOST_PAGES},
};

// One row per kind, in the kind's order, each named by a value of its own
// that is not `auto`.
constexpr bool backend_rows_complete()
{
    constexpr size_t kinds = static_cast<size_t>(BackendKind::last) + 1;
    if (std::size(backend_rows) != kinds)
        return false;
    for (size_t i = 0; i < kinds; ++i) {
        if (static_cast<size_t>(backend_rows[i].kind) != i ||
            backend_rows[i].setting == Backend::auto_select)
            return false;
        for (size_t j = 0; j < i; ++j)
            if (backend_rows[j].setting == backend_rows[i].setting)
                return false;
    }
    return true;
}
static_assert(backend_rows_complete(),
              "one row per BackendKind, in its order, with a GDRHOOK_BACKEND value of its own");

constexpr const BackendRow &backend_row(BackendKind kind)
{
    return backend_rows[static_cast<size_t>(kind)];
}

// "none", "dmabuf", "kmod", "pin_user_pages": GDRHOOK_BACKEND's words.
inline const char *to_string(BackendKind kind)
{
    return to_string(backend_row(kind).setting);
}

} // namespace gdrhook
