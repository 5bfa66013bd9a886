// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A GDRHOOK_* variable gdrhook does not read is said, with the nearest one
// it does read; anything else in the environment is left alone (issue 40).
#include "cache/base/unknown_variables.h"

#include <catch2/catch.hpp>

using namespace gdrhook;

namespace {
Diagnostics said_of(std::initializer_list<const char *> entries)
{
    std::vector<const char *> environment(entries);
    environment.push_back(nullptr);
    Diagnostics diagnostics;
    check_variable_names(environment.data(), diagnostics);
    return diagnostics;
}
} // namespace

TEST_CASE("a misspelled setting is said once, naming the setting it is nearest")
{
    const Diagnostics said = said_of({"GDRHOOK_PIN_MIN_SZE=4M"});
    REQUIRE(said.size() == 1);
    CHECK(said[0].find("GDRHOOK_PIN_MIN_SZE is not a gdrhook variable") != std::string::npos);
    CHECK(said[0].find("did you mean GDRHOOK_PIN_MIN_SIZE?") != std::string::npos);
    // The value is not repeated: an environment may hold secrets.
    CHECK(said[0].find("4M") == std::string::npos);
    CHECK(closest_known_variable("GDRHOOK_LOGLEVEL") == "GDRHOOK_LOG_LEVEL");
    CHECK(closest_known_variable("GDRHOOK_EVENT") == "GDRHOOK_EVENTS");
    CHECK(closest_known_variable("GDRHOOK_PNI") == "GDRHOOK_PIN"); // two letters swapped
    CHECK(closest_known_variable("GDRHOOK_backend") == "GDRHOOK_BACKEND");
    CHECK(closest_known_variable("GDRHOOK_CACHE_MAX_ENTRY") == "GDRHOOK_CACHE_MAX_ENTRIES");
    CHECK(closest_known_variable("GDRHOOK_LIBRAY") == "GDRHOOK_LIBRARY");
}

TEST_CASE("an unknown variable near no setting says there is no close match")
{
    const Diagnostics said = said_of({"GDRHOOK_FOO=1", "GDRHOOK_=1"});
    REQUIRE(said.size() == 2);
    CHECK(said[0].find("GDRHOOK_FOO is not a gdrhook variable") != std::string::npos);
    CHECK(said[0].find("no close match") != std::string::npos);
    CHECK(said[0].find("did you mean") == std::string::npos);
    CHECK(said[1].find("no close match") != std::string::npos);
    CHECK(closest_known_variable("GDRHOOK_PINNING_POLICY").empty());
}

TEST_CASE("settings, the product's other variables, test knobs and others' variables are not said")
{
    std::vector<const char *> entries;
    for (const ConfigVariable &variable : config_variables())
        entries.push_back(variable.name);
    for (const char *name : other_product_variables)
        entries.push_back(name);
    entries.push_back("GDRHOOKTEST_SHIM=/build/libgdrhook.so"); // the test harness's prefix
    entries.push_back("GDRHOOK=/usr/bin/gdrhook");
    entries.push_back("UCX_TLS=rc");
    entries.push_back("gdrhook_pin=alloc"); // another prefix, as UCX_ is case-sensitive
    entries.push_back(nullptr);
    Diagnostics said;
    check_variable_names(entries.data(), said);
    CHECK(said.empty());
    for (const ConfigVariable &variable : config_variables())
        CHECK(is_known_variable(variable.name));
    CHECK_FALSE(is_known_variable("GDRHOOK_SHIM")); // a test knob's old name
}
