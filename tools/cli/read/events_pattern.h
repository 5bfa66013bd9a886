// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The logs a GDRHOOK_EVENTS pattern names, by the shim's own grammar
// (cache/base/path_pattern.h): what `gdrhook run` sums up after its program
// and `gdrhook epilog` checks of a job.
#pragma once

#include <string>
#include <vector>

namespace gdrhook::cli {

// The files a GDRHOOK_EVENTS pattern produced on this host: %p matches any
// pid, %r any rank (or the "x" of none), %h is @p host (by default this
// machine's short name, as the shim writes it).
std::vector<std::string> expand_events_pattern(const std::string &pattern);
std::vector<std::string> expand_events_pattern(const std::string &pattern, const std::string &host);

} // namespace gdrhook::cli
