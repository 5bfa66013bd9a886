// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A free the driver refuses frees nothing, so under the shim it unpins
// nothing: tests/programs/refused_frees frees addresses inside live
// allocations that pin-on-alloc pinned (two of device memory, one of
// page-locked host memory, which the fake device exports here) and inside
// a registered range, and one in no allocation, then frees them all for
// real. Each pin must be released by its own allocation's free, never by a
// refused one.
#include "program_runs.h"

#include <map>
#include <sstream>

namespace {

size_t count_lines_with(const std::string &output, const std::string &text)
{
    std::istringstream lines(output);
    std::string line;
    size_t n = 0;
    while (std::getline(lines, line))
        n += line.find(text) != std::string::npos;
    return n;
}

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
    const std::map<std::string, std::string> host_exported = {{"FAKECUDA_HOST_DMABUF", "1"}};
    RunResult plain = run_test_program("GDRHOOKTEST_REFUSED_FREES", {}, log, false, host_exported);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    // Each free inside an allocation: CUDA_ERROR_INVALID_VALUE, as the
    // H200's driver (580.159.04) answered every one of them.
    CHECK(count_lines_with(plain.output, "refused ") == 6);
    CHECK(count_lines_with(plain.output, "(no allocation)") == 1);
    CHECK(count_lines_with(plain.output, " rc=1") == 6);
    RunResult hooked = run_test_program("GDRHOOKTEST_REFUSED_FREES", {}, log, true, host_exported);
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
    CHECK(refused == 6);
    REQUIRE(freed_at.size() == 4);

    std::map<long long, std::string> pinned_addr; // handle -> address
    for (const EventLine &e : events)
        if (e["ev"] == "pin")
            pinned_addr[e.number("handle")] = e["addr"];
    CHECK(pinned_addr.size() == 3); // the host memory too
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
