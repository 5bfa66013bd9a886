// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook doctor`: probe the machine (machine_facts.h), judge the facts
// (doctor_judge.h), print the findings.
#pragma once

#include "doctor/doctor_judge.h"
#include "doctor/machine_facts.h"

#include <iosfwd>

namespace gdrhook::cli {

// What to look at (pid: also this running process), or --settings.
struct DoctorOptions : MachineQuery {
    bool settings = false; // only list the GDRHOOK_* settings
};

// Prints every check with its advice; exit_ok when nothing blocks pinning
// GPU memory through gdrhook, else exit_findings.
int run_doctor(const DoctorOptions &options, std::ostream &out);

// `doctor --settings`: the table of GDRHOOK_* variables (a Markdown table:
// variable, values, default, the value here), then any value the shim
// would reject, each in the shim's words; exit_findings if there is one.
int print_settings(std::ostream &out);

} // namespace gdrhook::cli
