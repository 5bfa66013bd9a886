// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/diagnostics.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace gdrhook {

spdlog::logger &diagnostics()
{
    // Leaked on purpose: destructors of other libraries may still call into
    // the shim after ours have run.
    static spdlog::logger *logger = [] {
        auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        auto *created = new spdlog::logger("gdrhook", std::move(sink));
        created->set_pattern("gdrhook[%P] %l: %v");
        created->set_level(spdlog::level::warn);
        created->flush_on(spdlog::level::trace);
        return created;
    }();
    return *logger;
}

void set_diagnostics_level(LogLevel level)
{
    diagnostics().set_level(static_cast<spdlog::level::level_enum>(level));
}

} // namespace gdrhook
