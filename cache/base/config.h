// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Every GDRHOOK_* environment variable, parsed once into one struct. The
// rest of the code reads the struct, never the environment. A bad value is
// reported in one line naming the variable, the value and what is accepted,
// and the default is used instead: the host program always runs.
#pragma once

#include "cache/base/path_pattern.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gdrhook {

// Each enum lists its values in the order config.cpp names them.
enum class LogLevel { trace, debug, info, warn, error, critical, off };
enum class Backend { auto_select, kmod, dmabuf, pin_user_pages, none };
enum class PinPolicy { off, alloc, demand };
enum class UcxBridgeMode { auto_detect, on, off };

struct Config {
    bool disabled = false;               // GDRHOOK_DISABLE
    LogLevel log_level = LogLevel::warn; // GDRHOOK_LOG_LEVEL
    std::string events_path;             // GDRHOOK_EVENTS, %p %h %r expanded
    std::string events_pattern; // GDRHOOK_EVENTS as written (a forked child expands it again)
    std::string host;           // the short host name (%h)
    std::string rank;           // the rank (%r), "" when unknown
    std::string rank_from;      // the variable the rank came from
    uint64_t log_max_bytes = 256ull << 20;          // GDRHOOK_LOG_MAX_BYTES, 0 = no cap
    size_t queue_capacity = 4096;                   // GDRHOOK_QUEUE_CAPACITY
    Backend backend = Backend::auto_select;         // GDRHOOK_BACKEND
    PinPolicy pin = PinPolicy::demand;              // GDRHOOK_PIN
    uint64_t pin_min_size = 1 << 20;                // GDRHOOK_PIN_MIN_SIZE
    bool verify = false;                            // GDRHOOK_VERIFY
    bool pointer_queries = true;                    // GDRHOOK_POINTER_QUERIES
    uint64_t cache_max_bytes = 0;                   // GDRHOOK_CACHE_MAX_BYTES, 0 = no limit
    uint64_t cache_max_entries = 65536;             // GDRHOOK_CACHE_MAX_ENTRIES
    uint32_t sample_ms = 0;                         // GDRHOOK_SAMPLE_MS, 0 = no samples
    UcxBridgeMode ucx = UcxBridgeMode::auto_detect; // GDRHOOK_UCX
    bool profile = false;                           // GDRHOOK_PROFILE
};

// GDRHOOK_SAMPLE_MS: 0, or an interval in this range. Below 10 ms the
// samples would cost the worker more than they tell; an hour is plenty.
inline constexpr uint32_t min_sample_ms = 10;
inline constexpr uint32_t max_sample_ms = 3600 * 1000;

// One line per rejected variable, ready to print.
using Diagnostics = std::vector<std::string>;

// Looks a variable up; returns nullptr when it is not set.
using EnvLookup = std::function<const char *(const char *name)>;

Config parse_config(const EnvLookup &lookup, int pid, Diagnostics &diagnostics);

// What a variable's parser may need besides its value.
struct ParseContext {
    int pid = 0;
};

// The words a variable that takes one of a list accepts, in the order
// its enum lists them (empty for any other variable).
struct ConfigChoices {
    const char *const *names = nullptr;
    size_t count = 0;
    const char *const *begin() const { return names; }
    const char *const *end() const { return names + count; }
};

// One GDRHOOK_* variable, named once: config_variables() is the table
// from which parse_config() reads the environment, config_values() shows
// the settings, `gdrhook doctor --settings` lists them, and against which
// a test checks the README's table (tests/docs/check_settings.py).
struct ConfigVariable {
    const char *name;
    const char *accepted; // what it accepts, as the README's table says it
    const char *fallback; // its default, the same way
    // Reads a set value into the Config; a bad one adds a line to the
    // diagnostics and leaves the default.
    void (*parse)(const char *name, const char *value, ParseContext &context, Config &config,
                  Diagnostics &diagnostics);
    std::string (*shown)(const Config &config); // the effective value, as text
    // What `parse` accepts where that is a list: `gdrhook run`'s options
    // that set the variable offer these, and check a value with `parse`.
    ConfigChoices choices = {};
};

// The table, to walk with a range for.
struct ConfigVariables {
    const ConfigVariable *first;
    size_t count;
    const ConfigVariable *begin() const { return first; }
    const ConfigVariable *end() const { return first + count; }
};
ConfigVariables config_variables();

// The table's entry for the variable `name`; nullptr if there is none.
const ConfigVariable *find_config_variable(const std::string &name);

// The variables that name a process's rank, in the order they are asked.
inline constexpr const char *rank_variables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                 "PMI_RANK", "SLURM_PROCID"};

// The file where the shim, as it is loaded, marks that it was
// (cache/core/load_mark.cpp): the Slurm plugin names one per step and
// node, and `gdrhook epilog --load-marks` reads it.
inline constexpr const char *load_marks_variable = "GDRHOOK_LOAD_MARKS";

// The GDRHOOK_* variables of the product that are not the shim's
// settings, so that the shim takes none for a misspelling
// (unknown_variables.h): the library `gdrhook run` preloads
// (tools/cli/run/library_locator.h), the module's make variable that
// turns warnings into errors in the project's own builds (kmod/Kbuild),
// and the load marks the Slurm plugin asks for.
inline constexpr const char *other_product_variables[] = {"GDRHOOK_LIBRARY", "GDRHOOK_WERROR",
                                                          load_marks_variable};

// The effective value of every GDRHOOK_* setting, by variable name, as
// text: GDRHOOK_EVENTS as written.
std::vector<std::pair<std::string, std::string>> config_values(const Config &config);

const char *to_string(LogLevel level);
const char *to_string(Backend backend);
const char *to_string(PinPolicy pin);
const char *to_string(UcxBridgeMode mode);

} // namespace gdrhook
