// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Every backend, once: its kind and, in one row of a table, what it is to
// the rest of gdrhook. The GDRHOOK_BACKEND value that asks for it
// (config.h's Backend, whose word, config.cpp's, is also the backend's
// name in the log and the doctor), what its registrations are to a
// library (include/gdrhook.h's GDRHOOK_REG_*), for a backend that pins
// through gdrhook.ko the PIN it asks for (the uapi's enum gdrhook_backend:
// numbers of the module's ABI, mapped here, never renumbered), and whether
// it can pin on this machine (backend_facts.h): `auto` (backend_rule.h),
// a backend attaching to the module and the doctor's list of what the
// machine allows all ask that. A new backend is a kind and a row; the
// build fails until the row is there, in the kind's order.
#pragma once

#include "cache/backends/backend_facts.h"
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
inline constexpr size_t backend_kind_count = static_cast<size_t>(BackendKind::last) + 1;

struct BackendRow {
    BackendKind kind;
    Backend setting;      // the GDRHOOK_BACKEND value that names it
    int32_t registration; // GDRHOOK_REG_*: what gdrhook_get() hands a library
    uint32_t module_pin;  // enum gdrhook_backend of its PIN; 0: not through the module
    // Whether it can pin here: success, or why not.
    Status (*usable)(const ModuleFacts &module, const GpuFacts &gpu);
};

inline constexpr BackendRow backend_rows[] = {
    {BackendKind::none, Backend::none, GDRHOOK_REG_NONE, 0, none_usable},
    {BackendKind::dmabuf, Backend::dmabuf, GDRHOOK_REG_DMABUF, 0, dmabuf_usable},
    {BackendKind::kmod, Backend::kmod, GDRHOOK_REG_KMOD, GDRHOOK_BACKEND_NVP2P, kmod_usable},
    {BackendKind::pin_user_pages, Backend::pin_user_pages, GDRHOOK_REG_KMOD,
     GDRHOOK_BACKEND_HOST_PAGES, pin_user_pages_usable},
};

// One row per kind, in the kind's order, each named by a value of its own
// that is not `auto`. (That each row has its judgement is the rule tests'
// to see, which call every row's: comparing a function's address is not a
// constant expression to GCC in an unoptimized sanitizer build.)
constexpr bool backend_rows_complete()
{
    if (std::size(backend_rows) != backend_kind_count)
        return false;
    for (size_t i = 0; i < backend_kind_count; ++i) {
        if (static_cast<size_t>(backend_rows[i].kind) != i ||
            backend_rows[i].setting == Backend::auto_select)
            return false;
        for (size_t j = 0; j < i; ++j)
            if (backend_rows[j].setting == backend_rows[i].setting)
                return false;
    }
    return true;
}
static_assert(backend_rows_complete(), "one row per BackendKind, in its order, with a "
                                       "GDRHOOK_BACKEND value of its own");

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
