// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/config.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

using namespace gdrhook;

namespace {
Config parse(const std::map<std::string, std::string> &env, Diagnostics &diagnostics)
{
    return parse_config(
        [&](const char *name) -> const char * {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        },
        4242, diagnostics);
}
} // namespace

TEST_CASE("with no variables set every setting has its default")
{
    Diagnostics d;
    Config c = parse({}, d);
    CHECK(d.empty());
    CHECK_FALSE(c.disabled);
    CHECK(c.log_level == LogLevel::warn);
    CHECK(c.events_path.empty());
    CHECK(c.queue_capacity == 4096);
    CHECK(c.backend == Backend::auto_select);
    CHECK(c.pin == PinPolicy::demand);
    CHECK(c.sample_ms == 0);
    CHECK(c.ucx == UcxBridgeMode::auto_detect);
    CHECK_FALSE(c.profile);
}

TEST_CASE("valid values are taken, case-insensitively where they are words")
{
    Diagnostics d;
    Config c = parse({{"GDRHOOK_DISABLE", "yes"},
                      {"GDRHOOK_LOG_LEVEL", "TRACE"},
                      {"GDRHOOK_EVENTS", "/tmp/ev.%p.jsonl"},
                      {"GDRHOOK_QUEUE_CAPACITY", "1000"},
                      {"GDRHOOK_BACKEND", "dmabuf"},
                      {"GDRHOOK_PIN", "alloc"},
                      {"GDRHOOK_PIN_MIN_SIZE", "64K"},
                      {"GDRHOOK_CACHE_MAX_BYTES", "2GiB"},
                      {"GDRHOOK_UCX", "OFF"},
                      {"GDRHOOK_PROFILE", "1"}},
                     d);
    CHECK(d.empty());
    CHECK(c.disabled);
    CHECK(c.log_level == LogLevel::trace);
    CHECK(c.events_path == "/tmp/ev.4242.jsonl");
    CHECK(c.queue_capacity == 1024); // rounded up to a power of two
    CHECK(c.backend == Backend::dmabuf);
    CHECK(c.pin == PinPolicy::alloc);
    CHECK(c.pin_min_size == 65536);
    CHECK(c.cache_max_bytes == (2ull << 30));
    CHECK(c.ucx == UcxBridgeMode::off);
    CHECK(c.profile);
}

TEST_CASE("GDRHOOK_UCX takes auto, on or off; anything else gives one line and auto")
{
    Diagnostics d;
    CHECK(parse({{"GDRHOOK_UCX", "on"}}, d).ucx == UcxBridgeMode::on);
    CHECK(parse({{"GDRHOOK_UCX", "auto"}}, d).ucx == UcxBridgeMode::auto_detect);
    CHECK(d.empty());
    Config c = parse({{"GDRHOOK_UCX", "yes"}}, d);
    CHECK(c.ucx == UcxBridgeMode::auto_detect);
    REQUIRE(d.size() == 1);
    CHECK(d[0] == "gdrhook: GDRHOOK_UCX='yes' is not valid: expected auto, on or off; "
                  "using auto");
}

TEST_CASE("each bad value gives one line naming variable, value and what is accepted")
{
    Diagnostics d;
    Config c = parse({{"GDRHOOK_QUEUE_CAPACITY", "-5"},
                      {"GDRHOOK_DISABLE", "maybe"},
                      {"GDRHOOK_BACKEND", "rdma"},
                      {"GDRHOOK_PIN_MIN_SIZE", "12X"}},
                     d);
    REQUIRE(d.size() == 4);
    CHECK(c.queue_capacity == 4096);
    CHECK_FALSE(c.disabled);
    CHECK(c.backend == Backend::auto_select);
    CHECK(d[0] == "gdrhook: GDRHOOK_DISABLE='maybe' is not valid: expected 1, 0, true, "
                  "false, yes, no, on or off; using 0");
    CHECK(d[1] == "gdrhook: GDRHOOK_QUEUE_CAPACITY='-5' is not valid: expected an integer "
                  "from 2 to 1048576 (K, M, G, T suffixes allowed); using 4096");
    CHECK(d[2] == "gdrhook: GDRHOOK_BACKEND='rdma' is not valid: expected auto, kmod, dmabuf, "
                  "pin_user_pages or none; using auto");
    CHECK(d[3].find("GDRHOOK_PIN_MIN_SIZE='12X'") != std::string::npos);
}

TEST_CASE("out-of-range and overflowing sizes are rejected")
{
    Diagnostics d;
    parse({{"GDRHOOK_QUEUE_CAPACITY", "1"}}, d);
    parse({{"GDRHOOK_QUEUE_CAPACITY", "99999999999999999999999"}}, d);
    parse({{"GDRHOOK_PIN_MIN_SIZE", "20000000000T"}}, d);
    CHECK(d.size() == 3);
}

TEST_CASE("a size must start with a digit: blanks and signs are rejected, not wrapped")
{
    // Found by tests/fuzz/fuzz_config: strtoull skips blanks and accepts a
    // sign, so " -1" was taken as 18446744073709551615.
    for (const char *value : {" -1", " 5", "\t7", "+3", "-0", " +1K"}) {
        INFO("GDRHOOK_PIN_MIN_SIZE='" << value << "'");
        Diagnostics d;
        Config c = parse({{"GDRHOOK_PIN_MIN_SIZE", value}}, d);
        CHECK(d.size() == 1);
        CHECK(c.pin_min_size == Config().pin_min_size);
    }
}

TEST_CASE("GDRHOOK_SAMPLE_MS takes 0 or milliseconds from 10 to 3600000")
{
    for (auto [value, expected] : {std::pair<const char *, uint32_t>{"0", 0},
                                   {"10", 10},
                                   {"20", 20},
                                   {"1000", 1000},
                                   {"3600000", 3600000}}) {
        INFO("GDRHOOK_SAMPLE_MS='" << value << "'");
        Diagnostics d;
        Config c = parse({{"GDRHOOK_SAMPLE_MS", value}}, d);
        CHECK(d.empty());
        CHECK(c.sample_ms == expected);
    }
}

TEST_CASE("a bad GDRHOOK_SAMPLE_MS gives one line and sampling stays off")
{
    for (const char *value : {"", "5", "9", "3600001", "-20", " 20", "20ms", "1s", "2.5",
                              "99999999999999999999999", "0x20"}) {
        INFO("GDRHOOK_SAMPLE_MS='" << value << "'");
        Diagnostics d;
        Config c = parse({{"GDRHOOK_SAMPLE_MS", value}}, d);
        REQUIRE(d.size() == 1);
        CHECK(d[0] == std::string("gdrhook: GDRHOOK_SAMPLE_MS='") + value +
                          "' is not valid: expected 0 (off) or milliseconds from 10 to "
                          "3600000; using 0");
        CHECK(c.sample_ms == 0);
    }
}

TEST_CASE("%p, %h and %r expand to the pid, the host and the rank; other % sequences are refused")
{
    const PathNames names{7, "node3", "12"};
    auto expanded = [&](const char *pattern, const PathNames &n) {
        const Result<std::string> out = expand_path_pattern(pattern, n);
        return out ? *out : "error: " + out.why();
    };
    CHECK(expanded("a.%p.b", names) == "a.7.b");
    CHECK(expanded("100%%-%p", names) == "100%-7");
    CHECK(expanded("/shared/%h/rank%r.%p.jsonl", names) == "/shared/node3/rank12.7.jsonl");
    CHECK(expanded("rank%r", PathNames{7, "node3", ""}) == "rankx");
    CHECK(expanded("trailing%", names) == "error: a % at the end (known: %p %h %r %%)");
    CHECK(expanded("bad%q", names) == "error: unknown sequence %q (known: %p %h %r %%)");
}

TEST_CASE("the short host name never makes an empty component, a hidden file or a folder")
{
    CHECK(short_host_name_of("node3.cluster.example") == "node3");
    CHECK(short_host_name_of("node3") == "node3");
    CHECK(short_host_name_of("") == "localhost");
    CHECK(short_host_name_of(".lead") == "localhost");
    CHECK(short_host_name_of("a/b.example") == "a_b");
    CHECK(short_host_name_of("..") == "localhost");
}

TEST_CASE("the rank comes from the first of the launchers' variables that is set")
{
    Diagnostics d;
    Config c =
        parse({{"SLURM_PROCID", "5"}, {"PMI_RANK", "3"}, {"GDRHOOK_EVENTS", "r%r.jsonl"}}, d);
    CHECK(d.empty());
    CHECK(c.rank == "3");
    CHECK(c.rank_from == "PMI_RANK");
    CHECK(c.events_path == "r3.jsonl");
    Config none = parse({{"RANK", "two"}, {"GDRHOOK_EVENTS", "r%r-%h.jsonl"}}, d);
    CHECK(none.rank.empty()); // not a number: as if unset, and the later ones are not asked
    CHECK(none.events_path == "rx-" + none.host + ".jsonl");
    CHECK(!none.host.empty());
    CHECK(none.host.find('.') == std::string::npos);
}

TEST_CASE("a GDRHOOK_EVENTS pattern with an unknown sequence is refused, and nothing is logged")
{
    Diagnostics d;
    Config c = parse({{"GDRHOOK_EVENTS", "/tmp/%t.jsonl"}}, d);
    REQUIRE(d.size() == 1);
    CHECK(d[0] == "gdrhook: GDRHOOK_EVENTS='/tmp/%t.jsonl' is not valid: unknown sequence %t "
                  "(known: %p %h %r %%); no events are logged");
    CHECK(c.events_path.empty());
    CHECK(c.events_pattern.empty());
}

TEST_CASE("each row's default is a value its parser takes, and the Config's default")
{
    const Config defaults;
    for (const ConfigVariable &variable : config_variables()) {
        INFO(variable.name);
        if (!variable.fallback) { // unset: nothing to show
            CHECK(variable.shown(defaults).empty());
            continue;
        }
        Diagnostics d;
        CHECK(variable.shown(parse({{variable.name, variable.fallback}}, d)) ==
              variable.shown(defaults));
        CHECK(d.empty());
    }
}

TEST_CASE("each word of a row's choices is taken, and shown as itself")
{
    size_t with_choices = 0;
    for (const ConfigVariable &variable : config_variables()) {
        INFO(variable.name);
        CHECK((variable.kind == SettingKind::choice) == (variable.choices.count > 0));
        with_choices += variable.choices.count > 0;
        for (const ChoiceWord &choice : variable.choices) {
            INFO(variable.name << "=" << choice.word);
            Diagnostics d;
            CHECK(variable.shown(parse({{variable.name, choice.word}}, d)) == choice.word);
            CHECK(d.empty());
        }
    }
    CHECK(with_choices > 0);
}

TEST_CASE("every value of a choice's enum has a word of its own in its row")
{
    const std::pair<const char *, size_t> choices[] = {
        {"GDRHOOK_LOG_LEVEL", static_cast<size_t>(LogLevel::last) + 1},
        {"GDRHOOK_BACKEND", static_cast<size_t>(Backend::last) + 1},
        {"GDRHOOK_PIN", static_cast<size_t>(PinPolicy::last) + 1},
        {"GDRHOOK_UCX", static_cast<size_t>(UcxBridgeMode::last) + 1},
    };
    for (const auto &[name, values] : choices) {
        INFO(name);
        const ConfigVariable *variable = find_config_variable(name);
        REQUIRE(variable != nullptr);
        std::vector<bool> named(values, false);
        for (const ChoiceWord &choice : variable->choices) {
            REQUIRE(static_cast<size_t>(choice.value) < values);
            CHECK_FALSE(named[static_cast<size_t>(choice.value)]);
            named[static_cast<size_t>(choice.value)] = true;
        }
        CHECK(std::count(named.begin(), named.end(), true) == static_cast<long>(values));
    }
}

TEST_CASE("a number is taken from its row's min to its max, and refused past either")
{
    size_t numbers = 0;
    for (const ConfigVariable &variable : config_variables()) {
        if (variable.kind != SettingKind::bytes && variable.kind != SettingKind::count &&
            variable.kind != SettingKind::milliseconds)
            continue;
        ++numbers;
        INFO(variable.name << ": " << variable.min << " to " << variable.max);
        REQUIRE(variable.min <= variable.max);
        for (uint64_t edge : {variable.min, variable.max}) {
            Diagnostics d;
            CHECK(variable.shown(parse({{variable.name, std::to_string(edge)}}, d)) ==
                  std::to_string(edge));
            CHECK(d.empty());
        }
        // Just past each end; 0 is a period's "off", and taken.
        const bool below = variable.min > (variable.kind == SettingKind::milliseconds ? 1 : 0);
        for (uint64_t past : {below ? variable.min - 1 : variable.max,
                              variable.max < UINT64_MAX ? variable.max + 1 : variable.max}) {
            if (past == variable.max)
                continue;
            Diagnostics d;
            parse({{variable.name, std::to_string(past)}}, d);
            INFO("refused: " << past);
            REQUIRE(d.size() == 1);
            CHECK(d[0].find(" to " + std::to_string(variable.max)) != std::string::npos);
        }
    }
    CHECK(numbers > 0);
}

TEST_CASE("the parser keeps the bounds the README gives")
{
    // Written out here, not read from the table: a bound changed in the
    // table changes what the shim accepts, and must be seen to.
    const std::pair<const char *, std::vector<std::pair<const char *, bool>>> bounds[] = {
        {"GDRHOOK_QUEUE_CAPACITY",
         {{"1", false}, {"2", true}, {"1048576", true}, {"1048577", false}}},
        {"GDRHOOK_CACHE_MAX_ENTRIES",
         {{"0", false}, {"1", true}, {"4294967296", true}, {"4294967297", false}}},
        {"GDRHOOK_SAMPLE_MS", {{"9", false}, {"10", true}, {"3600000", true}, {"3600001", false}}},
        {"GDRHOOK_PIN_MIN_SIZE", {{"0", true}, {"16777215T", true}, {"16777216T", false}}},
    };
    for (const auto &[name, values] : bounds) {
        for (const auto &[value, taken] : values) {
            INFO(name << "=" << value);
            Diagnostics d;
            parse({{name, value}}, d);
            CHECK(d.empty() == taken);
        }
    }
}

TEST_CASE("what a row accepts and its default are said from the row")
{
    auto row = [](SettingKind kind, uint64_t min, uint64_t max, const char *note) {
        ConfigVariable v{};
        v.name = "GDRHOOK_X";
        v.kind = kind;
        v.min = min;
        v.max = max;
        v.note = note;
        return v;
    };
    CHECK(accepted_text(row(SettingKind::flag, 0, 0, nullptr)) ==
          "`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`");
    CHECK(accepted_text(row(SettingKind::count, 3, 70, "rounded")) ==
          "3 to 70 (K/M/G/T suffixes), rounded");
    CHECK(accepted_text(row(SettingKind::bytes, 0, UINT64_MAX, "0 = none")) ==
          "bytes (K/M/G/T suffixes), 0 = none");
    CHECK(accepted_text(row(SettingKind::bytes, 4, 8, nullptr)) ==
          "bytes from 4 to 8 (K/M/G/T suffixes)");
    CHECK(accepted_text(row(SettingKind::milliseconds, 5, 50, nullptr)) ==
          "`0`, or milliseconds 5 to 50");
    CHECK(accepted_text(row(SettingKind::path, 0, 0, "a path")) == "a path");
    const ChoiceWord words[] = {{1, "one"}, {0, "zero"}};
    ConfigVariable choice = row(SettingKind::choice, 0, 0, nullptr);
    choice.choices = {words, 2};
    CHECK(accepted_text(choice) == "`one`, `zero`");
    choice.fallback = "zero";
    CHECK(default_text(choice) == "`zero`");
    choice.fallback_note = "(none)";
    CHECK(default_text(choice) == "`zero` (none)");
    choice.fallback = nullptr;
    CHECK(default_text(choice) == "(none)");
}

TEST_CASE("a variable is found in the table by its name")
{
    REQUIRE(find_config_variable("GDRHOOK_BACKEND") != nullptr);
    CHECK(find_config_variable("GDRHOOK_NO_SUCH") == nullptr);
}
