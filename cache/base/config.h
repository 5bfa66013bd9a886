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

// A choice's words are config.cpp's list of {value, word} for its enum;
// `last` lets the build check that every value has its word.
enum class LogLevel { trace, debug, info, warn, error, critical, off, last = off };
enum class Backend { auto_select, kmod, dmabuf, pin_user_pages, none, last = none };
enum class PinPolicy { off, alloc, demand, last = demand };
enum class UcxBridgeMode { auto_detect, on, off, last = off };

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

// One line per rejected variable, ready to print.
using Diagnostics = std::vector<std::string>;

// Looks a variable up; returns nullptr when it is not set.
using EnvLookup = std::function<const char *(const char *name)>;

Config parse_config(const EnvLookup &lookup, int pid, Diagnostics &diagnostics);

// What a variable's parser may need besides its value.
struct ParseContext {
    int pid = 0;
};

// One word of a choice and the enum value it names: the parser, the
// enum's to_string(), the `accepted` text and `gdrhook run`'s options
// read the same list.
struct ChoiceWord {
    int value;
    const char *word;
};

// The words a variable that takes one of a list accepts, in the order
// they are said (empty for any other variable).
struct ConfigChoices {
    const ChoiceWord *words = nullptr;
    size_t count = 0;
    const ChoiceWord *begin() const { return words; }
    const ChoiceWord *end() const { return words + count; }
};

// How a setting's value is written: which reader parses it, and how its
// `accepted` text is made from the row.
enum class SettingKind {
    flag,         // a boolean: 1/0, true/false, yes/no, on/off
    choice,       // one of `choices`, in any case
    bytes,        // a byte count with K/M/G/T suffixes, from min to max
    count,        // a number with K/M/G/T suffixes, from min to max
    milliseconds, // plain digits: 0 (off), or from min to max
    path,         // a path pattern (path_pattern.h), said by `note`
};

struct ConfigVariable;
using ConfigParser = void (*)(const ConfigVariable &self, const char *value, ParseContext &context,
                              Config &config, Diagnostics &diagnostics);

// One GDRHOOK_* variable, named once, in the manner of an option table:
// config_variables() is the table from which parse_config() reads the
// environment, config_values() shows the settings, `gdrhook doctor
// --settings` lists them (accepted_text(), default_text()), and against
// which a test checks the README's table (tests/docs/check_settings.py).
// What a value may be lives in the row (kind, bounds, words): the parser
// reads it there, and the text that says it is made from it.
struct ConfigVariable {
    const char *name;
    SettingKind kind;
    uint64_t min = 0, max = 0;      // bytes, count, milliseconds: the range taken
    ConfigChoices choices = {};     // choice: its words
    const char *note = nullptr;     // said after the values ("0 = no cap"); a path's whole text
    const char *fallback = nullptr; // the default, as a value the parser takes; nullptr: unset
    const char *fallback_note = nullptr; // said after the default ("(off)"), or in its place
    // Reads a set value into the Config; a bad one adds a line to the
    // diagnostics and leaves the default.
    ConfigParser parse = nullptr;
    std::string (*shown)(const Config &config) = nullptr; // the effective value, as text
};

// What a variable accepts and its default, as the README's table says
// them (Markdown, words in `code`), made from its row.
std::string accepted_text(const ConfigVariable &variable);
std::string default_text(const ConfigVariable &variable);

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
