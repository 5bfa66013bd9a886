// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Human-readable messages from the shim to stderr ("gdrhook[pid] level:
// ..."), filtered by GDRHOOK_LOG_LEVEL. Separate from the event log, which
// is data for tools.
#pragma once

#include "cache/base/config.h"

#include <spdlog/logger.h>

namespace gdrhook {

// Created on first use; never destroyed, so messages still work while the
// process exits.
spdlog::logger &diagnostics();
void set_diagnostics_level(LogLevel level);

} // namespace gdrhook
