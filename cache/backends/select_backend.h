// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// GDRHOOK_BACKEND made into a backend object: the facts are gathered here
// (one probe of /dev/gdrhook, the current GPU's attributes), the choice is
// the rule's (backend_rule.h), and the chosen backend is built here, with
// the probe's open file.
#pragma once

#include "cache/backends/backend_rule.h"
#include "cache/backends/module_probe.h"
#include "cache/backends/pin_backend.h"
#include "cache/base/config.h"
#include "cache/base/driver_api.h"

#include <memory>
#include <string>

namespace gdrhook {

struct BackendChoice {
    std::unique_ptr<PinBackend> backend; // never null: `none` at worst
    std::string reason;                  // for the log
    BackendDecision decision;            // what the rule picked
};

// What `device` says of itself, as the rule reads it.
GpuFacts gpu_facts(const DriverApi &driver, int device);

// An explicitly requested backend that cannot work gives a failed Status
// and the `none` backend (the program still runs, nothing is pinned).
Status select_backend(Backend wanted, const DriverApi &driver, int device,
                      const std::string &kmod_path, BackendChoice &out);

// The same from facts already gathered (the tests hand in their own).
Status select_backend_from(Backend wanted, ModuleProbe probe, const GpuFacts &gpu,
                           const DriverApi &driver, const std::string &kmod_path,
                           BackendChoice &out);

} // namespace gdrhook
