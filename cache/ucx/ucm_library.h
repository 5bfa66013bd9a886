// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Finds UCX's libucm at run time, by its soname: the shim never links it
// (ucm_abi.h declares what is used of it).
#pragma once

#include "cache/base/result.h"
#include "cache/ucx/ucm_abi.h"

#include <string>

namespace gdrhook {

struct UcmFunctions {
    ucm::SetExternalEvent set_external_event = nullptr;
    ucm::EventEnter event_enter = nullptr;
    ucm::EventLeave event_leave = nullptr;
    ucm::EventDispatch event_dispatch = nullptr;
};

// libucm's functions when libucm.so.0 is loaded in the process (or, with
// `load`, can be loaded); else a failure saying why not. A libucm found is
// never unloaded (the handle stays open), so the functions stay valid.
Result<UcmFunctions> find_ucm(bool load);

// Whether objects may have been loaded since the last call that returned
// true (dl_iterate_phdr's count of loads): a look for libucm is only worth
// its dlopen when something new is there.
bool objects_loaded_since_last_look();

} // namespace gdrhook
