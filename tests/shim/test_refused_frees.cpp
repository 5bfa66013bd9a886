// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A free the driver refuses frees nothing, so under the shim it unpins
// nothing: tests/programs/refused_frees frees addresses inside two live
// allocations that pin-on-alloc pinned, and one in no allocation, then
// frees both for real. Each pin must be released by its own allocation's
// free, never by a refused one.
#include "program_runs.h"

#include <map>
#include <sstream>

namespace {

// The program's own lines: the shim's report on stderr left out.
std::string program_lines(const std::string &output)
{
    std::istringstream lines(output);
    std::string line, kept;
    while (std::getline(lines, line))
        if (line.rfind("gdrhook[", 0) != 0)
            kept += line + "\n";
    return kept;
}

} // namespace

TEST_CASE("A free the driver refuses unpins nothing of the allocation it points into")
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program("GDRHOOKTEST_REFUSED_FREES", {}, log, false);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult hooked = run_test_program("GDRHOOKTEST_REFUSED_FREES", {}, log, true);
    INFO(hooked.output);
    REQUIRE(hooked.exit_status == 0);
    CHECK(program_lines(hooked.output) == program_lines(plain.output));

    std::vector<EventLine> events = read_recorded_events(log);
    check_no_error_events(events);
    check_every_pin_released_by_a_free(events);

    // When each allocation's own successful free began, by address.
    std::map<std::string, long long> freed_at;
    size_t refused = 0;
    for (const EventLine &e : events) {
        if (e["ev"] != "free")
            continue;
        if (e.number("rc") == 0) {
            freed_at[e["addr"]] = e.number("ts_ns");
            continue;
        }
        ++refused;
        INFO("refused free at " << e["addr"] << " by " << e["api"]);
        CHECK(e.number("size") == 0); // it freed nothing
    }
    CHECK(refused == 4);
    REQUIRE(freed_at.size() == 2);

    std::map<long long, std::string> pinned_addr; // handle -> address
    for (const EventLine &e : events)
        if (e["ev"] == "pin")
            pinned_addr[e.number("handle")] = e["addr"];
    CHECK(pinned_addr.size() == 2);
    for (const EventLine &e : events) {
        if (e["ev"] != "unpin")
            continue;
        const std::string addr = pinned_addr[e.number("handle")];
        INFO("unpin of the pin at " << addr);
        REQUIRE(freed_at.count(addr) == 1);
        // An unpin's time is when its release began; a free's, before
        // the real free ran: the release belongs to a later free.
        CHECK(e.number("ts_ns") >= freed_at[addr]);
    }
}
