// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The shim is invisible when unused: it exports the interposed entry points,
// dlsym, the endings it writes its log before (hook/process_endings.cpp)
// and gdrhook_* only; spdlog and fmt stay inside.
#include "event_lines.h"
#include "hook/entry_points.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <set>

TEST_CASE("the shim exports only the interposed symbols, dlsym, the endings and gdrhook_*")
{
    std::string command = "nm -D --defined-only " + build_path("GDRHOOKTEST_SHIM");
    FILE *nm = popen(command.c_str(), "r");
    REQUIRE(nm != nullptr);
    std::set<std::string> exported;
    char line[512];
    while (fgets(line, sizeof(line), nm)) {
        char address[64], type[8], name[400];
        if (sscanf(line, "%63s %7s %399s", address, type, name) == 3)
            exported.insert(name);
    }
    REQUIRE(pclose(nm) == 0);

    std::set<std::string> expected = {"dlsym",   "_exit", "_Exit",  "quick_exit",
                                      "execve",  "execv", "execvp", "execvpe",
                                      "fexecve", "execl", "execlp", "execle"};
#define GDRHOOK_NAME(symbol, ...) expected.insert(#symbol);
    GDRHOOK_DRIVER_ENTRY_POINTS(GDRHOOK_NAME)
    GDRHOOK_RUNTIME_ENTRY_POINTS(GDRHOOK_NAME)
#undef GDRHOOK_NAME

    for (const std::string &name : exported) {
        INFO(name);
        CHECK((expected.count(name) || name.rfind("gdrhook_", 0) == 0));
    }
    for (const std::string &name : expected) {
        INFO(name);
        CHECK(exported.count(name) == 1);
    }
}
