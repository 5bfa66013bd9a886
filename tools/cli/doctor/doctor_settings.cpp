// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// `gdrhook doctor --settings`: every GDRHOOK_* variable from the shim's own
// table (cache/base/config.h), what it accepts, its default, and what it
// is in this environment, read by the shim's own parser; a value the shim
// would reject, and a GDRHOOK_* variable nothing reads, are said as the
// shim would say them.
#include "command/exit_code.h"
#include "doctor/doctor.h"

#include "cache/base/config.h"
#include "cache/base/unknown_variables.h"

#include <cstdlib>
#include <ostream>
#include <unistd.h>

namespace gdrhook::cli {

int print_settings(std::ostream &out)
{
    Diagnostics rejected;
    const Config here = parse_config([](const char *name) { return std::getenv(name); },
                                     static_cast<int>(getpid()), rejected);
    out << "| variable | values | default | here |\n|---|---|---|---|\n";
    for (const ConfigVariable &variable : config_variables()) {
        const char *set = std::getenv(variable.name);
        out << "| `" << variable.name << "` | " << accepted_text(variable) << " | "
            << default_text(variable) << " | "
            << (set ? "`" + variable.shown(here) + "`" : std::string("(not set)")) << " |\n";
    }
    check_variable_names(environ, rejected);
    for (const std::string &line : rejected)
        out << line << "\n";
    return rejected.empty() ? exit_ok : exit_findings;
}

} // namespace gdrhook::cli
