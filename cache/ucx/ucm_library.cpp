// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/ucx/ucm_library.h"

#include <atomic>
#include <dlfcn.h>
#include <link.h>

namespace gdrhook {
namespace {

constexpr const char *ucm_soname = "libucm.so.0";

template <typename Function> bool look_up(void *library, const char *name, Function &out)
{
    out = reinterpret_cast<Function>(dlsym(library, name));
    return out != nullptr;
}

std::atomic<unsigned long long> loads_seen{0};

int read_load_count(struct dl_phdr_info *info, size_t, void *data)
{
    *static_cast<unsigned long long *>(data) = info->dlpi_adds;
    return 1; // the count is the same in every object's answer
}

} // namespace

Result<UcmFunctions> find_ucm(bool load)
{
    void *library = dlopen(ucm_soname, RTLD_LAZY | (load ? RTLD_GLOBAL : RTLD_NOLOAD));
    if (!library) {
        const char *error = load ? dlerror() : nullptr;
        return Result<UcmFunctions>::failure(
            Status::error(StatusCode::no_device, 0, "dlopen libucm"),
            error ? error : std::string(ucm_soname) + " is not loaded");
    }
    UcmFunctions found;
    if (!look_up(library, "ucm_set_external_event", found.set_external_event) ||
        !look_up(library, "ucm_event_enter", found.event_enter) ||
        !look_up(library, "ucm_event_leave", found.event_leave) ||
        !look_up(library, "ucm_event_dispatch", found.event_dispatch)) {
        dlclose(library);
        return Result<UcmFunctions>::failure(
            Status::error(StatusCode::unsupported, 0, "libucm's functions"),
            std::string(ucm_soname) + " lacks ucm_set_external_event, ucm_event_enter, "
                                      "ucm_event_leave or ucm_event_dispatch");
    }
    return found;
}

bool objects_loaded_since_last_look()
{
    unsigned long long loads = 0;
    dl_iterate_phdr(read_load_count, &loads);
    return loads_seen.exchange(loads, std::memory_order_relaxed) != loads;
}

} // namespace gdrhook
