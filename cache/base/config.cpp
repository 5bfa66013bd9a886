// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unistd.h>

namespace gdrhook {
namespace {

template <typename Enum, size_t N>
struct Choices {
    const char *names[N];
    Enum values[N];
};

std::string join_names(const char *const *names, size_t count)
{
    std::string out;
    for (size_t i = 0; i < count; ++i) {
        if (i)
            out += i + 1 == count ? " or " : ", ";
        out += names[i];
    }
    return out;
}

void reject(Diagnostics &diagnostics, const char *name, const char *value,
            const std::string &accepted, const std::string &fallback)
{
    diagnostics.push_back(std::string("gdrhook: ") + name + "='" + value +
                          "' is not valid: expected " + accepted + "; using " +
                          fallback);
}

template <typename Enum, size_t N>
void parse_choice(const EnvLookup &lookup, const char *name,
                  const char *const (&names)[N], const Enum (&values)[N],
                  Enum &field, Diagnostics &diagnostics)
{
    const char *value = lookup(name);
    if (!value)
        return;
    for (size_t i = 0; i < N; ++i) {
        if (strcasecmp(value, names[i]) == 0) {
            field = values[i];
            return;
        }
    }
    const char *fallback = "";
    for (size_t i = 0; i < N; ++i)
        if (values[i] == field)
            fallback = names[i];
    reject(diagnostics, name, value, join_names(names, N), fallback);
}

std::optional<bool> parse_bool(const char *value)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off", ""};
    for (const char *word : yes)
        if (strcasecmp(value, word) == 0)
            return true;
    for (const char *word : no)
        if (strcasecmp(value, word) == 0)
            return false;
    return std::nullopt;
}

void parse_flag(const EnvLookup &lookup, const char *name, bool &field,
                Diagnostics &diagnostics)
{
    const char *value = lookup(name);
    if (!value)
        return;
    if (auto parsed = parse_bool(value))
        field = *parsed;
    else
        reject(diagnostics, name, value, "1, 0, true, false, yes, no, on or off",
               field ? "1" : "0");
}

// A byte count: decimal digits with an optional K, M, G or T suffix (powers
// of 1024, optionally followed by "iB" or "B").
std::optional<uint64_t> parse_size(const char *value)
{
    // Digits first: strtoull would also skip leading blanks and take a
    // sign, so " -1" would wrap to 2^64 - 1.
    if (*value < '0' || *value > '9')
        return std::nullopt;
    errno = 0;
    char *end = nullptr;
    unsigned long long number = strtoull(value, &end, 10);
    if (errno || end == value)
        return std::nullopt;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    case 't': case 'T': shift = 40; ++end; break;
    default: return std::nullopt;
    }
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end)
        return std::nullopt;
    if (shift && number > (UINT64_MAX >> shift))
        return std::nullopt;
    return static_cast<uint64_t>(number) << shift;
}

void parse_size_var(const EnvLookup &lookup, const char *name, uint64_t min,
                    uint64_t max, uint64_t &field, Diagnostics &diagnostics)
{
    const char *value = lookup(name);
    if (!value)
        return;
    auto parsed = parse_size(value);
    if (parsed && *parsed >= min && *parsed <= max) {
        field = *parsed;
        return;
    }
    reject(diagnostics, name, value,
           "an integer from " + std::to_string(min) + " to " + std::to_string(max) +
               " (K, M, G, T suffixes allowed)",
           std::to_string(field));
}

// A period in milliseconds: plain decimal digits (no suffix, no sign), 0
// for off or a value in [min_sample_ms, max_sample_ms].
void parse_sample_ms(const EnvLookup &lookup, const char *name, uint32_t &field,
                     Diagnostics &diagnostics)
{
    const char *value = lookup(name);
    if (!value)
        return;
    bool digits = *value != '\0' && strspn(value, "0123456789") == strlen(value);
    if (digits) {
        errno = 0;
        unsigned long long number = strtoull(value, nullptr, 10);
        if (!errno && (number == 0 || (number >= min_sample_ms && number <= max_sample_ms))) {
            field = static_cast<uint32_t>(number);
            return;
        }
    }
    reject(diagnostics, name, value,
           "0 (off) or milliseconds from " + std::to_string(min_sample_ms) + " to " +
               std::to_string(max_sample_ms),
           std::to_string(field));
}

size_t round_up_to_power_of_two(size_t value)
{
    size_t power = 2;
    while (power < value)
        power <<= 1;
    return power;
}

} // namespace

bool expand_path_pattern(const std::string &pattern, const PathNames &names, std::string &out,
                         std::string &error)
{
    out.clear();
    out.reserve(pattern.size() + 16);
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%') {
            out += pattern[i];
            continue;
        }
        const char code = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        switch (code) {
        case 'p': out += std::to_string(names.pid); break;
        case 'h': out += names.host; break;
        case 'r': out += names.rank.empty() ? "x" : names.rank; break;
        case '%': out += '%'; break;
        default:
            error = code ? std::string("unknown sequence %") + code + " (known: %p %h %r %%)"
                         : std::string("a % at the end (known: %p %h %r %%)");
            return false;
        }
        ++i;
    }
    return true;
}

namespace {

std::string short_host_name()
{
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || !name[0])
        return "localhost";
    std::string host = name;
    return host.substr(0, host.find('.'));
}

bool is_decimal(const char *text)
{
    if (!*text)
        return false;
    for (const char *c = text; *c; ++c)
        if (*c < '0' || *c > '9')
            return false;
    return true;
}

} // namespace

Config parse_config(const EnvLookup &lookup, int pid, Diagnostics &diagnostics)
{
    Config config;

    parse_flag(lookup, "GDRHOOK_DISABLE", config.disabled, diagnostics);

    static const char *const level_names[] = {"trace", "debug", "info", "warn",
                                              "error", "critical", "off"};
    static const LogLevel level_values[] = {LogLevel::trace, LogLevel::debug,
                                            LogLevel::info, LogLevel::warn,
                                            LogLevel::error, LogLevel::critical,
                                            LogLevel::off};
    parse_choice(lookup, "GDRHOOK_LOG_LEVEL", level_names, level_values,
                 config.log_level, diagnostics);

    config.host = short_host_name();
    for (const char *variable : rank_variables) {
        if (const char *value = lookup(variable)) {
            if (is_decimal(value)) {
                config.rank = value;
                config.rank_from = variable;
            }
            break;
        }
    }
    if (const char *events = lookup("GDRHOOK_EVENTS")) {
        std::string path, error;
        if (expand_path_pattern(events, PathNames{pid, config.host, config.rank}, path, error)) {
            config.events_path = path;
            config.events_pattern = events;
        } else
            diagnostics.push_back(std::string("gdrhook: GDRHOOK_EVENTS='") + events +
                                  "' is not valid: " + error + "; no events are logged");
    }

    uint64_t capacity = config.queue_capacity;
    parse_size_var(lookup, "GDRHOOK_QUEUE_CAPACITY", 2, 1u << 20, capacity,
                   diagnostics);
    config.queue_capacity = round_up_to_power_of_two(capacity);

    static const char *const backend_names[] = {"auto", "kmod", "dmabuf", "none"};
    static const Backend backend_values[] = {Backend::auto_select, Backend::kmod,
                                             Backend::dmabuf, Backend::none};
    parse_choice(lookup, "GDRHOOK_BACKEND", backend_names, backend_values,
                 config.backend, diagnostics);

    static const char *const pin_names[] = {"off", "alloc", "demand"};
    static const PinPolicy pin_values[] = {PinPolicy::off, PinPolicy::alloc,
                                           PinPolicy::demand};
    parse_choice(lookup, "GDRHOOK_PIN", pin_names, pin_values, config.pin,
                 diagnostics);

    parse_size_var(lookup, "GDRHOOK_PIN_MIN_SIZE", 0, UINT64_MAX,
                   config.pin_min_size, diagnostics);
    parse_flag(lookup, "GDRHOOK_VERIFY", config.verify, diagnostics);
    parse_size_var(lookup, "GDRHOOK_CACHE_MAX_BYTES", 0, UINT64_MAX,
                   config.cache_max_bytes, diagnostics);
    parse_size_var(lookup, "GDRHOOK_CACHE_MAX_ENTRIES", 1, 1ull << 32,
                   config.cache_max_entries, diagnostics);
    parse_sample_ms(lookup, "GDRHOOK_SAMPLE_MS", config.sample_ms, diagnostics);

    static const char *const ucx_names[] = {"auto", "on", "off"};
    static const UcxBridgeMode ucx_values[] = {UcxBridgeMode::auto_detect, UcxBridgeMode::on,
                                               UcxBridgeMode::off};
    parse_choice(lookup, "GDRHOOK_UCX", ucx_names, ucx_values, config.ucx, diagnostics);
    return config;
}

std::vector<std::pair<std::string, std::string>> config_values(const Config &c)
{
    return {
        {"GDRHOOK_DISABLE", c.disabled ? "1" : "0"},
        {"GDRHOOK_LOG_LEVEL", to_string(c.log_level)},
        {"GDRHOOK_EVENTS", c.events_pattern},
        {"GDRHOOK_QUEUE_CAPACITY", std::to_string(c.queue_capacity)},
        {"GDRHOOK_BACKEND", to_string(c.backend)},
        {"GDRHOOK_PIN", to_string(c.pin)},
        {"GDRHOOK_PIN_MIN_SIZE", std::to_string(c.pin_min_size)},
        {"GDRHOOK_VERIFY", c.verify ? "1" : "0"},
        {"GDRHOOK_CACHE_MAX_BYTES", std::to_string(c.cache_max_bytes)},
        {"GDRHOOK_CACHE_MAX_ENTRIES", std::to_string(c.cache_max_entries)},
        {"GDRHOOK_SAMPLE_MS", std::to_string(c.sample_ms)},
        {"GDRHOOK_UCX", to_string(c.ucx)},
    };
}

const char *to_string(LogLevel level)
{
    static const char *const names[] = {"trace", "debug", "info", "warn",
                                        "error", "critical", "off"};
    return names[static_cast<int>(level)];
}

const char *to_string(Backend backend)
{
    static const char *const names[] = {"auto", "kmod", "dmabuf", "none"};
    return names[static_cast<int>(backend)];
}

const char *to_string(PinPolicy pin)
{
    static const char *const names[] = {"off", "alloc", "demand"};
    return names[static_cast<int>(pin)];
}

const char *to_string(UcxBridgeMode mode)
{
    static const char *const names[] = {"auto", "on", "off"};
    return names[static_cast<int>(mode)];
}

} // namespace gdrhook
