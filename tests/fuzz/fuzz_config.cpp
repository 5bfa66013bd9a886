// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libFuzzer target: the GDRHOOK_* environment parser (cache/base/config.cpp).
// The input is an environment, one NAME=VALUE per line; parse_config reads
// it through its EnvLookup. Besides the sanitizers' findings, any result
// that breaks the parser's contract aborts: an accepted value lands in the
// struct, a rejected one leaves the default and names its variable, and
// the queue capacity is a power of two within its bounds.
#include "cache/base/config.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

void require(bool condition)
{
    if (!condition)
        abort();
}

bool is_power_of_two(uint64_t v)
{
    return v && !(v & (v - 1));
}

// What parse_size accepts: digits, then optionally one of K M G T (either
// case) followed optionally by "iB" or "B".
bool is_size_text(const std::string &text)
{
    size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        ++i;
    if (i == 0)
        return false;
    if (i == text.size())
        return true;
    if (!strchr("kKmMgGtT", text[i]))
        return false;
    std::string rest = text.substr(i + 1);
    return rest.empty() || rest == "iB" || rest == "B";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::map<std::string, std::string> env;
    std::string text(reinterpret_cast<const char *>(data), size);
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(start, end - start);
        size_t eq = line.find('=');
        // Like the real environment: no NUL inside a value (getenv stops there).
        if (eq != std::string::npos)
            env[line.substr(0, eq)] = line.substr(eq + 1).c_str();
        start = end + 1;
    }
    auto lookup = [&env](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };

    const int pid = 4242;
    gdrhook::Diagnostics diagnostics;
    gdrhook::Config config = gdrhook::parse_config(lookup, pid, diagnostics);
    const gdrhook::Config defaults;

    require(is_power_of_two(config.queue_capacity));
    require(config.queue_capacity >= 2 && config.queue_capacity <= (1u << 20));
    require(config.cache_max_entries >= 1 && config.cache_max_entries <= (1ull << 32));
    const gdrhook::ConfigVariable *sample = gdrhook::find_config_variable("GDRHOOK_SAMPLE_MS");
    require(config.sample_ms == 0 ||
            (config.sample_ms >= sample->min && config.sample_ms <= sample->max));
    require(static_cast<int>(config.log_level) <= static_cast<int>(gdrhook::LogLevel::off));
    require(static_cast<int>(config.backend) <= static_cast<int>(gdrhook::Backend::none));
    require(static_cast<int>(config.pin) <= static_cast<int>(gdrhook::PinPolicy::demand));
    // to_string must accept whatever was parsed.
    require(gdrhook::to_string(config.log_level) && gdrhook::to_string(config.backend) &&
            gdrhook::to_string(config.pin));

    // Each line names what it refused: a GDRHOOK_ variable, or the
    // launcher's rank variable the parser read (the first one set).
    for (const std::string &line : diagnostics) {
        const bool setting = line.rfind("gdrhook: GDRHOOK_", 0) == 0 &&
                             line.find("is not valid") != std::string::npos;
        bool rank = false;
        for (const char *variable : gdrhook::rank_variables)
            rank = rank || (line.rfind("gdrhook: " + std::string(variable) + "='", 0) == 0 &&
                            line.find("is not a rank") != std::string::npos);
        require(setting || rank);
    }

    // A size variable is either taken as written (digits and a suffix only)
    // or rejected by name, with its default kept.
    struct SizeVar {
        const char *name;
        uint64_t parsed, fallback;
    };
    const SizeVar sizes[] = {
        {"GDRHOOK_PIN_MIN_SIZE", config.pin_min_size, defaults.pin_min_size},
        {"GDRHOOK_CACHE_MAX_BYTES", config.cache_max_bytes, defaults.cache_max_bytes},
        {"GDRHOOK_CACHE_MAX_ENTRIES", config.cache_max_entries, defaults.cache_max_entries},
    };
    for (const SizeVar &var : sizes) {
        const char *value = lookup(var.name);
        if (!value)
            continue;
        bool rejected = false;
        for (const std::string &line : diagnostics)
            rejected = rejected || line.rfind("gdrhook: " + std::string(var.name) + "='", 0) == 0;
        if (rejected)
            require(var.parsed == var.fallback);
        else
            require(is_size_text(value));
    }

    // The % sequences never lose or invent text other than theirs; a
    // pattern refused leaves no log.
    if (const char *events = lookup("GDRHOOK_EVENTS")) {
        const auto expanded =
            gdrhook::expand_path_pattern(events, gdrhook::PathNames{pid, config.host, config.rank});
        if (expanded)
            require(config.events_path == *expanded);
        else
            require(config.events_path.empty() && !expanded.why().empty());
        if (!strchr(events, '%'))
            require(config.events_path == events);
    }
    return 0;
}
