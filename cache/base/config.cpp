// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>
#include <unistd.h>

namespace gdrhook {
namespace {

// "a, b or c".
template <typename Words> std::string join_words(const Words &words, const char *last = " or ")
{
    std::string out;
    size_t i = 0;
    const size_t count = std::size(words);
    for (const auto &word : words) {
        if (i)
            out += i + 1 == count ? last : ", ";
        out += word;
        ++i;
    }
    return out;
}

void reject(Diagnostics &diagnostics, const char *name, const char *value,
            const std::string &accepted, const std::string &fallback)
{
    diagnostics.push_back(std::string("gdrhook: ") + name + "='" + value +
                          "' is not valid: expected " + accepted + "; using " + fallback);
}

std::vector<std::string> words_of(const ConfigChoices &choices)
{
    std::vector<std::string> words;
    for (const ChoiceWord &choice : choices)
        words.emplace_back(choice.word);
    return words;
}

const char *word_of(const ConfigChoices &choices, int value)
{
    for (const ChoiceWord &choice : choices)
        if (choice.value == value)
            return choice.word;
    return "?";
}

// A choice variable takes the words of its row, in any case.
template <typename Enum>
void parse_choice(const ConfigVariable &self, const char *value, Enum &field,
                  Diagnostics &diagnostics)
{
    for (const ChoiceWord &choice : self.choices) {
        if (strcasecmp(value, choice.word) == 0) {
            field = static_cast<Enum>(choice.value);
            return;
        }
    }
    reject(diagnostics, self.name, value, join_words(words_of(self.choices)),
           word_of(self.choices, static_cast<int>(field)));
}

// A boolean's spellings, each yes beside its no; the empty value is no.
constexpr const char *flag_yes[] = {"1", "true", "yes", "on"};
constexpr const char *flag_no[] = {"0", "false", "no", "off"};

std::optional<bool> parse_bool(const char *value)
{
    if (!*value)
        return false;
    for (const char *word : flag_yes)
        if (strcasecmp(value, word) == 0)
            return true;
    for (const char *word : flag_no)
        if (strcasecmp(value, word) == 0)
            return false;
    return std::nullopt;
}

void parse_flag(const ConfigVariable &self, const char *value, bool &field,
                Diagnostics &diagnostics)
{
    if (auto parsed = parse_bool(value)) {
        field = *parsed;
        return;
    }
    std::vector<std::string> words;
    for (size_t i = 0; i < std::size(flag_yes); ++i) {
        words.emplace_back(flag_yes[i]);
        words.emplace_back(flag_no[i]);
    }
    reject(diagnostics, self.name, value, join_words(words), field ? "1" : "0");
}

// A size's suffixes, powers of 1024, in either case.
struct SizeSuffix {
    char letter;
    unsigned shift;
};
constexpr SizeSuffix size_suffixes[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}};

std::string suffix_letters(const char *between)
{
    std::string out;
    for (const SizeSuffix &suffix : size_suffixes)
        out += (out.empty() ? "" : between) + std::string(1, suffix.letter);
    return out;
}

// A byte count: decimal digits with an optional suffix of size_suffixes
// (optionally followed by "iB" or "B").
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
    for (const SizeSuffix &suffix : size_suffixes) {
        if (*end && toupper(static_cast<unsigned char>(*end)) == suffix.letter) {
            shift = suffix.shift;
            ++end;
            break;
        }
    }
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end)
        return std::nullopt;
    if (shift && number > (UINT64_MAX >> shift))
        return std::nullopt;
    return static_cast<uint64_t>(number) << shift;
}

// A size in the row's range [min, max].
void parse_size_var(const ConfigVariable &self, const char *value, uint64_t &field,
                    Diagnostics &diagnostics)
{
    auto parsed = parse_size(value);
    if (parsed && *parsed >= self.min && *parsed <= self.max) {
        field = *parsed;
        return;
    }
    reject(diagnostics, self.name, value,
           "an integer from " + std::to_string(self.min) + " to " + std::to_string(self.max) +
               " (" + suffix_letters(", ") + " suffixes allowed)",
           std::to_string(field));
}

// A period in milliseconds: plain decimal digits (no suffix, no sign), 0
// for off or a value in the row's range [min, max].
void parse_milliseconds(const ConfigVariable &self, const char *value, uint32_t &field,
                        Diagnostics &diagnostics)
{
    bool digits = *value != '\0' && strspn(value, "0123456789") == strlen(value);
    if (digits) {
        errno = 0;
        unsigned long long number = strtoull(value, nullptr, 10);
        if (!errno && number <= UINT32_MAX &&
            (number == 0 || (number >= self.min && number <= self.max))) {
            field = static_cast<uint32_t>(number);
            return;
        }
    }
    reject(diagnostics, self.name, value,
           "0 (off) or milliseconds from " + std::to_string(self.min) + " to " +
               std::to_string(self.max),
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

template <typename Enum> constexpr ChoiceWord named(Enum value, const char *word)
{
    return {static_cast<int>(value), word};
}

// Each value of `Enum` named once, by a word of its own: the build fails
// until a new value has its word.
template <typename Enum, size_t N>
constexpr bool names_each_value_once(const ChoiceWord (&words)[N], Enum last)
{
    if (N != static_cast<size_t>(last) + 1)
        return false;
    for (size_t i = 0; i < N; ++i) {
        if (words[i].value < 0 || static_cast<size_t>(words[i].value) >= N)
            return false;
        for (size_t j = 0; j < i; ++j)
            if (words[j].value == words[i].value ||
                std::string_view(words[j].word) == std::string_view(words[i].word))
                return false;
    }
    return true;
}

constexpr ChoiceWord level_words[] = {
    named(LogLevel::trace, "trace"), named(LogLevel::debug, "debug"),
    named(LogLevel::info, "info"),   named(LogLevel::warn, "warn"),
    named(LogLevel::error, "error"), named(LogLevel::critical, "critical"),
    named(LogLevel::off, "off")};
static_assert(names_each_value_once(level_words, LogLevel::last));

constexpr ChoiceWord backend_words[] = {
    named(Backend::auto_select, "auto"), named(Backend::kmod, "kmod"),
    named(Backend::dmabuf, "dmabuf"), named(Backend::pin_user_pages, "pin_user_pages"),
    named(Backend::none, "none")};
static_assert(names_each_value_once(backend_words, Backend::last));

constexpr ChoiceWord pin_words[] = {named(PinPolicy::off, "off"), named(PinPolicy::alloc, "alloc"),
                                    named(PinPolicy::demand, "demand")};
static_assert(names_each_value_once(pin_words, PinPolicy::last));

constexpr ChoiceWord ucx_words[] = {named(UcxBridgeMode::auto_detect, "auto"),
                                    named(UcxBridgeMode::on, "on"),
                                    named(UcxBridgeMode::off, "off")};
static_assert(names_each_value_once(ucx_words, UcxBridgeMode::last));

template <size_t N> constexpr ConfigChoices choices_of(const ChoiceWord (&words)[N])
{
    return {words, N};
}

// A row's reader and shower of a field of the Config, by kind: the field
// is named in the row, the reading is its kind's.
template <bool Config::*Field>
void read_flag(const ConfigVariable &v, const char *value, ParseContext &, Config &c,
               Diagnostics &d)
{
    parse_flag(v, value, c.*Field, d);
}

template <auto Field>
void read_choice(const ConfigVariable &v, const char *value, ParseContext &, Config &c,
                 Diagnostics &d)
{
    parse_choice(v, value, c.*Field, d);
}

template <uint64_t Config::*Field>
void read_size(const ConfigVariable &v, const char *value, ParseContext &, Config &c,
               Diagnostics &d)
{
    parse_size_var(v, value, c.*Field, d);
}

template <bool Config::*Field> std::string shown_flag(const Config &c)
{
    return c.*Field ? "1" : "0";
}

template <auto Field> std::string shown_word(const Config &c)
{
    return to_string(c.*Field);
}

template <auto Field> std::string shown_number(const Config &c)
{
    return std::to_string(c.*Field);
}

// GDRHOOK_EVENTS: a pattern expanded with the process's names; one that
// cannot be is refused whole, and nothing is logged.
void read_events(const ConfigVariable &v, const char *value, ParseContext &context, Config &c,
                 Diagnostics &d)
{
    const Result<std::string> path =
        expand_path_pattern(value, PathNames{context.pid, c.host, c.rank});
    if (path) {
        c.events_path = *path;
        c.events_pattern = value;
    } else
        d.push_back(std::string("gdrhook: ") + v.name + "='" + value +
                    "' is not valid: " + path.why() + "; no events are logged");
}

void read_queue_capacity(const ConfigVariable &v, const char *value, ParseContext &, Config &c,
                         Diagnostics &d)
{
    uint64_t capacity = c.queue_capacity;
    parse_size_var(v, value, capacity, d);
    c.queue_capacity = round_up_to_power_of_two(capacity);
}

void read_sample_ms(const ConfigVariable &v, const char *value, ParseContext &, Config &c,
                    Diagnostics &d)
{
    parse_milliseconds(v, value, c.sample_ms, d);
}

// Every GDRHOOK_* variable the shim reads, once: its name, what a value
// may be (kind, bounds, words) and its default, how a value is read into
// the Config and how the Config's value is shown. parse_config,
// config_values and `gdrhook doctor --settings` walk it; tests/docs checks
// the README's table against that listing.
// A row of each kind, its fields named by the maker's parameters.
using Shower = std::string (*)(const Config &config);

constexpr ConfigVariable row(const char *name, SettingKind kind, ConfigParser parse, Shower shown)
{
    ConfigVariable v{};
    v.name = name;
    v.kind = kind;
    v.parse = parse;
    v.shown = shown;
    return v;
}

constexpr ConfigVariable flag(const char *name, const char *fallback, ConfigParser parse,
                              Shower shown)
{
    ConfigVariable v = row(name, SettingKind::flag, parse, shown);
    v.fallback = fallback;
    return v;
}

constexpr ConfigVariable choice(const char *name, ConfigChoices words, const char *fallback,
                                ConfigParser parse, Shower shown)
{
    ConfigVariable v = row(name, SettingKind::choice, parse, shown);
    v.choices = words;
    v.fallback = fallback;
    return v;
}

// A number of `kind` from min to max; `note` is said after the range.
constexpr ConfigVariable number(const char *name, SettingKind kind, uint64_t min, uint64_t max,
                                const char *note, const char *fallback, ConfigParser parse,
                                Shower shown)
{
    ConfigVariable v = row(name, kind, parse, shown);
    v.min = min;
    v.max = max;
    v.note = note;
    v.fallback = fallback;
    return v;
}

constexpr ConfigVariable with_fallback_note(ConfigVariable v, const char *fallback_note)
{
    v.fallback_note = fallback_note;
    return v;
}

constexpr ConfigVariable path(const char *name, const char *note, const char *unset,
                              ConfigParser parse, Shower shown)
{
    ConfigVariable v = row(name, SettingKind::path, parse, shown);
    v.note = note;
    v.fallback_note = unset;
    return v;
}

constexpr uint64_t any_bytes = UINT64_MAX;

// Every GDRHOOK_* variable the shim reads, once: its name, what a value
// may be (kind, bounds, words) and its default, how a value is read into
// the Config and how the Config's value is shown. parse_config,
// config_values and `gdrhook doctor --settings` walk it; tests/docs checks
// the README's table against that listing. Made at compile time: the
// shim reads it as it loads.
constexpr ConfigVariable variables[] = {
    flag("GDRHOOK_DISABLE", "0", read_flag<&Config::disabled>, shown_flag<&Config::disabled>),
    choice("GDRHOOK_LOG_LEVEL", choices_of(level_words), "warn", read_choice<&Config::log_level>,
           shown_word<&Config::log_level>),
    path("GDRHOOK_EVENTS",
         "a path; `%p` becomes the pid, `%h` the short host name, `%r` the rank (`x` when none "
         "is set), `%%` a percent sign",
         "unset (no event log)", read_events, [](const Config &c) { return c.events_pattern; }),
    number("GDRHOOK_LOG_MAX_BYTES", SettingKind::bytes, 0, any_bytes, "0 = no cap", "256M",
           read_size<&Config::log_max_bytes>, shown_number<&Config::log_max_bytes>),
    number("GDRHOOK_QUEUE_CAPACITY", SettingKind::count, 2, 1u << 20,
           "rounded up to a power of two", "4096", read_queue_capacity,
           shown_number<&Config::queue_capacity>),
    choice("GDRHOOK_BACKEND", choices_of(backend_words), "auto", read_choice<&Config::backend>,
           shown_word<&Config::backend>),
    choice("GDRHOOK_PIN", choices_of(pin_words), "demand", read_choice<&Config::pin>,
           shown_word<&Config::pin>),
    number("GDRHOOK_PIN_MIN_SIZE", SettingKind::bytes, 0, any_bytes, nullptr, "1M",
           read_size<&Config::pin_min_size>, shown_number<&Config::pin_min_size>),
    flag("GDRHOOK_VERIFY", "0", read_flag<&Config::verify>, shown_flag<&Config::verify>),
    flag("GDRHOOK_POINTER_QUERIES", "on", read_flag<&Config::pointer_queries>,
         [](const Config &c) -> std::string { return c.pointer_queries ? "on" : "off"; }),
    number("GDRHOOK_CACHE_MAX_BYTES", SettingKind::bytes, 0, any_bytes, "0 = no limit", "0",
           read_size<&Config::cache_max_bytes>, shown_number<&Config::cache_max_bytes>),
    number("GDRHOOK_CACHE_MAX_ENTRIES", SettingKind::count, 1, 1ull << 32, nullptr, "65536",
           read_size<&Config::cache_max_entries>, shown_number<&Config::cache_max_entries>),
    // Below 10 ms the samples would cost the worker more than they tell;
    // an hour is plenty.
    with_fallback_note(number("GDRHOOK_SAMPLE_MS", SettingKind::milliseconds, 10, 3600 * 1000,
                              nullptr, "0", read_sample_ms, shown_number<&Config::sample_ms>),
                       "(off)"),
    choice("GDRHOOK_UCX", choices_of(ucx_words), "auto", read_choice<&Config::ucx>,
           shown_word<&Config::ucx>),
    flag("GDRHOOK_PROFILE", "0", read_flag<&Config::profile>, shown_flag<&Config::profile>),
};

std::string code(const std::string &word)
{
    return "`" + word + "`";
}

// The range a row takes, with the suffixes a size may have.
std::string range_text(const ConfigVariable &v)
{
    const bool bounded = v.min != 0 || v.max != UINT64_MAX;
    const std::string range = std::to_string(v.min) + " to " + std::to_string(v.max);
    const std::string suffixes = " (" + suffix_letters("/") + " suffixes)";
    if (v.kind == SettingKind::count)
        return range + suffixes;
    return (bounded ? "bytes from " + range : std::string("bytes")) + suffixes;
}

} // namespace

std::string accepted_text(const ConfigVariable &v)
{
    std::string text;
    switch (v.kind) {
    case SettingKind::flag:
        for (size_t i = 0; i < std::size(flag_yes); ++i)
            text += (i ? ", " : "") + code(flag_yes[i]) + "/" + code(flag_no[i]);
        break;
    case SettingKind::choice:
        for (const ChoiceWord &choice : v.choices)
            text += (text.empty() ? "" : ", ") + code(choice.word);
        break;
    case SettingKind::bytes:
    case SettingKind::count: text = range_text(v); break;
    case SettingKind::milliseconds:
        text = code("0") + ", or milliseconds " + std::to_string(v.min) + " to " +
               std::to_string(v.max);
        break;
    case SettingKind::path: break;
    }
    if (v.note)
        text += (text.empty() ? "" : ", ") + std::string(v.note);
    return text;
}

std::string default_text(const ConfigVariable &v)
{
    if (!v.fallback)
        return v.fallback_note ? v.fallback_note : "";
    return code(v.fallback) + (v.fallback_note ? " " + std::string(v.fallback_note) : "");
}

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
            variable.parse(variable, value, context, config, diagnostics);
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
    return word_of(choices_of(level_words), static_cast<int>(level));
}

const char *to_string(Backend backend)
{
    return word_of(choices_of(backend_words), static_cast<int>(backend));
}

const char *to_string(PinPolicy pin)
{
    return word_of(choices_of(pin_words), static_cast<int>(pin));
}

const char *to_string(UcxBridgeMode mode)
{
    return word_of(choices_of(ucx_words), static_cast<int>(mode));
}

} // namespace gdrhook
