// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <unistd.h>

namespace gdrhook {
namespace {

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
                          "' is not valid: expected " + accepted + "; using " + fallback);
}

// The names a choice variable accepts, in the order of its enum's values:
// parsing and printing read the same list.
template <typename Enum, size_t N>
void parse_choice(const char *name, const char *value, const char *const (&names)[N], Enum &field,
                  Diagnostics &diagnostics)
{
    for (size_t i = 0; i < N; ++i) {
        if (strcasecmp(value, names[i]) == 0) {
            field = static_cast<Enum>(i);
            return;
        }
    }
    reject(diagnostics, name, value, join_names(names, N), names[static_cast<size_t>(field)]);
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

void parse_flag(const char *name, const char *value, bool &field, Diagnostics &diagnostics)
{
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
    case 'k':
    case 'K':
        shift = 10;
        ++end;
        break;
    case 'm':
    case 'M':
        shift = 20;
        ++end;
        break;
    case 'g':
    case 'G':
        shift = 30;
        ++end;
        break;
    case 't':
    case 'T':
        shift = 40;
        ++end;
        break;
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

void parse_size_var(const char *name, const char *value, uint64_t min, uint64_t max,
                    uint64_t &field, Diagnostics &diagnostics)
{
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
void parse_sample_ms(const char *name, const char *value, uint32_t &field, Diagnostics &diagnostics)
{
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

bool is_decimal(const char *text)
{
    if (!*text)
        return false;
    for (const char *c = text; *c; ++c)
        if (*c < '0' || *c > '9')
            return false;
    return true;
}

// The rank a launcher's variable names, as the log writes it: a JSON
// number (no leading zeros; RANK=007 is rank 7) that fits MPI's int. Any
// other value leaves the process without a rank, and is said.
void read_rank(const char *variable, const char *value, Config &config, Diagnostics &diagnostics)
{
    constexpr unsigned long long max_rank = 2147483647;
    if (is_decimal(value)) {
        errno = 0;
        const unsigned long long rank = strtoull(value, nullptr, 10);
        if (errno == 0 && rank <= max_rank) {
            config.rank = std::to_string(rank);
            config.rank_from = variable;
            return;
        }
    }
    diagnostics.push_back(std::string("gdrhook: ") + variable + "='" + value +
                          "' is not a rank (0 to " + std::to_string(max_rank) +
                          "); the log names none, and %r is x");
}

const char *const level_names[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
const char *const backend_names[] = {"auto", "kmod", "dmabuf", "pin_user_pages", "none"};
const char *const pin_names[] = {"off", "alloc", "demand"};
const char *const ucx_names[] = {"auto", "on", "off"};

template <size_t N> constexpr ConfigChoices choices_of(const char *const (&names)[N])
{
    return {names, N};
}

std::string shown_size(uint64_t value)
{
    return std::to_string(value);
}

// Every GDRHOOK_* variable the shim reads, once: its name, what it
// accepts and its default as the README's table says them, how a value is
// read into the Config and how the Config's value is shown. parse_config,
// config_values and `gdrhook doctor --settings` walk it; tests/docs checks
// the README's table against that listing.
const ConfigVariable variables[] = {
    {"GDRHOOK_DISABLE", "`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`", "`0`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_flag(name, value, c.disabled, d);
     },
     [](const Config &c) -> std::string { return c.disabled ? "1" : "0"; }},
    {"GDRHOOK_LOG_LEVEL", "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`", "`warn`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_choice(name, value, level_names, c.log_level, d);
     },
     [](const Config &c) -> std::string { return to_string(c.log_level); },
     choices_of(level_names)},
    {"GDRHOOK_EVENTS",
     "a path; `%p` becomes the pid, `%h` the short host name, `%r` the rank (`x` when none is "
     "set), `%%` a percent sign",
     "unset (no event log)",
     [](const char *name, const char *value, ParseContext &context, Config &c, Diagnostics &d) {
         std::string path, error;
         if (expand_path_pattern(value, PathNames{context.pid, c.host, c.rank}, path, error)) {
             c.events_path = path;
             c.events_pattern = value;
         } else
             d.push_back(std::string("gdrhook: ") + name + "='" + value +
                         "' is not valid: " + error + "; no events are logged");
     },
     [](const Config &c) { return c.events_pattern; }},
    {"GDRHOOK_LOG_MAX_BYTES", "bytes (K/M/G/T suffixes), 0 = no cap", "`256M`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_size_var(name, value, 0, UINT64_MAX, c.log_max_bytes, d);
     },
     [](const Config &c) { return shown_size(c.log_max_bytes); }},
    {"GDRHOOK_QUEUE_CAPACITY", "2 to 1048576 (K/M suffixes), rounded up to a power of two",
     "`4096`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         uint64_t capacity = c.queue_capacity;
         parse_size_var(name, value, 2, 1u << 20, capacity, d);
         c.queue_capacity = round_up_to_power_of_two(capacity);
     },
     [](const Config &c) { return shown_size(c.queue_capacity); }},
    {"GDRHOOK_BACKEND", "`auto`, `kmod`, `dmabuf`, `pin_user_pages`, `none`", "`auto`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_choice(name, value, backend_names, c.backend, d);
     },
     [](const Config &c) -> std::string { return to_string(c.backend); },
     choices_of(backend_names)},
    {"GDRHOOK_PIN", "`off`, `demand`, `alloc`", "`demand`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_choice(name, value, pin_names, c.pin, d);
     },
     [](const Config &c) -> std::string { return to_string(c.pin); }, choices_of(pin_names)},
    {"GDRHOOK_PIN_MIN_SIZE", "bytes (K/M/G/T suffixes)", "`1M`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_size_var(name, value, 0, UINT64_MAX, c.pin_min_size, d);
     },
     [](const Config &c) { return shown_size(c.pin_min_size); }},
    {"GDRHOOK_VERIFY", "boolean", "`0`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_flag(name, value, c.verify, d);
     },
     [](const Config &c) -> std::string { return c.verify ? "1" : "0"; }},
    {"GDRHOOK_POINTER_QUERIES", "`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`", "`on`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_flag(name, value, c.pointer_queries, d);
     },
     [](const Config &c) -> std::string { return c.pointer_queries ? "on" : "off"; }},
    {"GDRHOOK_CACHE_MAX_BYTES", "bytes, 0 = no limit", "`0`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_size_var(name, value, 0, UINT64_MAX, c.cache_max_bytes, d);
     },
     [](const Config &c) { return shown_size(c.cache_max_bytes); }},
    {"GDRHOOK_CACHE_MAX_ENTRIES", "1 to 2^32", "`65536`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_size_var(name, value, 1, 1ull << 32, c.cache_max_entries, d);
     },
     [](const Config &c) { return shown_size(c.cache_max_entries); }},
    {"GDRHOOK_SAMPLE_MS", "`0`, or milliseconds 10 to 3600000", "`0` (off)",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_sample_ms(name, value, c.sample_ms, d);
     },
     [](const Config &c) { return shown_size(c.sample_ms); }},
    {"GDRHOOK_UCX", "`auto`, `on`, `off`", "`auto`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_choice(name, value, ucx_names, c.ucx, d);
     },
     [](const Config &c) -> std::string { return to_string(c.ucx); }, choices_of(ucx_names)},
    {"GDRHOOK_PROFILE", "boolean", "`0`",
     [](const char *name, const char *value, ParseContext &, Config &c, Diagnostics &d) {
         parse_flag(name, value, c.profile, d);
     },
     [](const Config &c) -> std::string { return c.profile ? "1" : "0"; }},
};

} // namespace

ConfigVariables config_variables()
{
    return {variables, std::size(variables)};
}

const ConfigVariable *find_config_variable(const std::string &name)
{
    for (const ConfigVariable &variable : variables)
        if (name == variable.name)
            return &variable;
    return nullptr;
}

Config parse_config(const EnvLookup &lookup, int pid, Diagnostics &diagnostics)
{
    Config config;
    // What GDRHOOK_EVENTS's pattern may name, before the variables.
    config.host = short_host_name();
    for (const char *variable : rank_variables) {
        if (const char *value = lookup(variable)) {
            read_rank(variable, value, config, diagnostics);
            break;
        }
    }
    ParseContext context{pid};
    for (const ConfigVariable &variable : variables)
        if (const char *value = lookup(variable.name))
            variable.parse(variable.name, value, context, config, diagnostics);
    return config;
}

std::vector<std::pair<std::string, std::string>> config_values(const Config &c)
{
    std::vector<std::pair<std::string, std::string>> values;
    for (const ConfigVariable &variable : variables)
        values.emplace_back(variable.name, variable.shown(c));
    return values;
}

const char *to_string(LogLevel level)
{
    return level_names[static_cast<size_t>(level)];
}

const char *to_string(Backend backend)
{
    return backend_names[static_cast<size_t>(backend)];
}

const char *to_string(PinPolicy pin)
{
    return pin_names[static_cast<size_t>(pin)];
}

const char *to_string(UcxBridgeMode mode)
{
    return ucx_names[static_cast<size_t>(mode)];
}

} // namespace gdrhook
