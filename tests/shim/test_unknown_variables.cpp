// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A GDRHOOK_* variable gdrhook does not read is said, with the nearest one
// it does read; anything else in the environment is left alone. First the
// check itself (cache/base/unknown_variables.h), then through the loader,
// as a user meets it: one warning line on stderr per such variable and
// process, however many threads call CUDA, naming the nearest setting or
// saying there is none; the program's output and exit untouched. The test
// harness's own knobs, all in this test's environment (meson's test_env),
// are never said.
#include "cache/base/unknown_variables.h"
#include "program_runs.h"

#include <catch2/catch.hpp>

namespace {
gdrhook::Diagnostics said_of(std::initializer_list<const char *> entries)
{
    std::vector<const char *> environment(entries);
    environment.push_back(nullptr);
    gdrhook::Diagnostics diagnostics;
    gdrhook::check_variable_names(environment.data(), diagnostics);
    return diagnostics;
}
} // namespace

TEST_CASE("a misspelled setting is said once, naming the setting it is nearest")
{
    const gdrhook::Diagnostics said = said_of({"GDRHOOK_PIN_MIN_SZE=4M"});
    REQUIRE(said.size() == 1);
    CHECK(said[0].find("GDRHOOK_PIN_MIN_SZE is not a gdrhook variable") != std::string::npos);
    CHECK(said[0].find("did you mean GDRHOOK_PIN_MIN_SIZE?") != std::string::npos);
    // The value is not repeated: an environment may hold secrets.
    CHECK(said[0].find("4M") == std::string::npos);
    CHECK(gdrhook::closest_known_variable("GDRHOOK_LOGLEVEL") == "GDRHOOK_LOG_LEVEL");
    CHECK(gdrhook::closest_known_variable("GDRHOOK_EVENT") == "GDRHOOK_EVENTS");
    CHECK(gdrhook::closest_known_variable("GDRHOOK_PNI") == "GDRHOOK_PIN"); // two letters swapped
    CHECK(gdrhook::closest_known_variable("GDRHOOK_backend") == "GDRHOOK_BACKEND");
    CHECK(gdrhook::closest_known_variable("GDRHOOK_CACHE_MAX_ENTRY") ==
          "GDRHOOK_CACHE_MAX_ENTRIES");
    CHECK(gdrhook::closest_known_variable("GDRHOOK_LIBRAY") == "GDRHOOK_LIBRARY");
}

TEST_CASE("an unknown variable near no setting says there is no close match")
{
    const gdrhook::Diagnostics said = said_of({"GDRHOOK_FOO=1", "GDRHOOK_=1"});
    REQUIRE(said.size() == 2);
    CHECK(said[0].find("GDRHOOK_FOO is not a gdrhook variable") != std::string::npos);
    CHECK(said[0].find("no close match") != std::string::npos);
    CHECK(said[0].find("did you mean") == std::string::npos);
    CHECK(said[1].find("no close match") != std::string::npos);
    CHECK(gdrhook::closest_known_variable("GDRHOOK_PINNING_POLICY").empty());
}

TEST_CASE("settings, the product's other variables, test knobs and others' variables are not said")
{
    std::vector<const char *> entries;
    for (const gdrhook::ConfigVariable &variable : gdrhook::config_variables())
        entries.push_back(variable.name);
    for (const char *name : gdrhook::other_product_variables)
        entries.push_back(name);
    entries.push_back("GDRHOOKTEST_SHIM=/build/libgdrhook.so"); // the test harness's prefix
    entries.push_back("GDRHOOK=/usr/bin/gdrhook");
    entries.push_back("UCX_TLS=rc");
    entries.push_back("gdrhook_pin=alloc"); // another prefix, as UCX_ is case-sensitive
    entries.push_back(nullptr);
    gdrhook::Diagnostics said;
    gdrhook::check_variable_names(entries.data(), said);
    CHECK(said.empty());
    for (const gdrhook::ConfigVariable &variable : gdrhook::config_variables())
        CHECK(gdrhook::is_known_variable(variable.name));
    CHECK_FALSE(gdrhook::is_known_variable("GDRHOOK_SHIM")); // a test knob's old name
}

namespace {

// `coherence_churn gdrhook` on four threads under the shim with
// pin-on-alloc, `extra` added to its environment; its stdout and stderr
// apart.
SplitRunResult run_churn(const std::map<std::string, std::string> &extra)
{
    std::map<std::string, std::string> env = pinning_environment(make_temp_dir() + "/events.jsonl");
    for (const auto &entry : extra)
        env[entry.first] = entry.second;
    return run_program_apart({build_path("GDRHOOKTEST_COHERENCE_CHURN"), "gdrhook", "4", "50", "2"},
                             env);
}

constexpr const char *unknown = "is not a gdrhook variable";

} // namespace

TEST_CASE("a misspelled GDRHOOK_ variable is said once per process, with the nearest setting")
{
    const SplitRunResult run =
        run_churn({{"GDRHOOK_PIN_MIN_SZE", "4M"}, {"GDRHOOK_NO_SUCH_THING", "1"}});
    INFO("stdout: " << run.out << "\nstderr: " << run.err);
    REQUIRE(run.exit_status == 0);
    CHECK(lines_with(run.err, unknown) == 2);
    CHECK(lines_with(run.err, "warning: gdrhook: GDRHOOK_PIN_MIN_SZE " + std::string(unknown) +
                                  " and is ignored (did you mean GDRHOOK_PIN_MIN_SIZE?") == 1);
    CHECK(lines_with(run.err, "GDRHOOK_NO_SUCH_THING " + std::string(unknown) +
                                  " and is ignored (no close match") == 1);
    // The program's own output: its one line, nothing of gdrhook's.
    CHECK(lines_with(run.out, "mode=gdrhook ") == 1);
    CHECK(lines_with(run.out, "gdrhook[") == 0);
    CHECK(output_field(run.out, "stale") == 0);
}

TEST_CASE("the test harness's knobs in the environment are never said")
{
    // This test runs with every knob of the shim suite set (meson's
    // test_env): each would be said here if it had the product's prefix.
    REQUIRE(std::getenv("GDRHOOKTEST_SHIM") != nullptr);
    const SplitRunResult run = run_churn({});
    INFO("stderr: " << run.err);
    REQUIRE(run.exit_status == 0);
    CHECK(lines_with(run.err, unknown) == 0);
}

TEST_CASE("the warning is a warning: GDRHOOK_LOG_LEVEL=error silences it")
{
    const SplitRunResult run =
        run_churn({{"GDRHOOK_PIN_MIN_SZE", "4M"}, {"GDRHOOK_LOG_LEVEL", "error"}});
    INFO("stderr: " << run.err);
    REQUIRE(run.exit_status == 0);
    CHECK(lines_with(run.err, unknown) == 0);
}
