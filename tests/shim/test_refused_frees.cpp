// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A free the driver refuses frees nothing, so under the shim it unpins
// nothing: tests/programs/refused_frees frees addresses inside live
// allocations that pin-on-alloc pinned (two of device memory, one of
// page-locked host memory, which the fake device exports here, three VMM
// mappings) and inside a registered range, and one in no allocation, then
// frees them all for real. Each pin must be released by its own allocation's free, never by a
// refused one.
#include "program_runs.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace {

uint64_t address_of(const EventLine &e)
{
    return std::stoull(e["addr"], nullptr, 16);
}

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

// A program's run plain and under the shim with pin-on-alloc.
struct BothRuns {
    std::string plain_lines; // the program's own output, the same in both
    std::vector<EventLine> events;
};

// Runs the program plain and hooked with `environment`: both exit 0 with
// the same output of their own, and the log has no error and releases
// every pin by a free or teardown.
BothRuns run_both(const char *program_variable,
                  const std::map<std::string, std::string> &environment = {})
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    RunResult plain = run_test_program(program_variable, {}, log, false, environment);
    INFO(plain.output);
    REQUIRE(plain.exit_status == 0);
    RunResult hooked = run_test_program(program_variable, {}, log, true, environment);
    INFO(hooked.output);
    REQUIRE(hooked.exit_status == 0);
    BothRuns both{program_lines(plain.output), read_recorded_events(log)};
    CHECK(program_lines(hooked.output) == both.plain_lines);
    check_no_error_events(both.events);
    check_every_pin_released_by_a_free(both.events);
    return both;
}

} // namespace

TEST_CASE("A free the driver refuses unpins nothing of the allocation it points into")
{
    const BothRuns both = run_both("GDRHOOKTEST_REFUSED_FREES", {{"FAKECUDA_HOST_DMABUF", "1"}});
    // Each free inside an allocation: CUDA_ERROR_INVALID_VALUE, as the
    // H200's driver (580.159.04) answered every one of them.
    CHECK(count_lines_with(both.plain_lines, "refused ") == 9);
    CHECK(count_lines_with(both.plain_lines, "(no allocation)") == 1);
    CHECK(count_lines_with(both.plain_lines, " rc=1") == 9);
    const std::vector<EventLine> &events = both.events;

    // The successful frees in log order; those of an address range (not a
    // VMM handle's cuMemRelease) end the pins inside them.
    struct Freed {
        uint64_t addr, size;
        long long ts;
    };
    std::vector<Freed> freed;
    size_t refused = 0, succeeded = 0;
    for (const EventLine &e : events) {
        if (e["ev"] != "free")
            continue;
        if (e.number("rc") == 0) {
            ++succeeded;
            if (e["api"] != "cuMemRelease")
                freed.push_back(
                    {address_of(e), static_cast<uint64_t>(e.number("size")), e.number("ts_ns")});
            continue;
        }
        ++refused;
        INFO("refused free at " << e["addr"] << " by " << e["api"]);
        CHECK(e.number("size") == 0); // it freed nothing
    }
    CHECK(refused == 9);
    // 4 allocations; 2 unmaps, 3 handles and the reservation of the VMM memory.
    CHECK(succeeded == 10);

    std::map<long long, uint64_t> pinned_addr; // handle -> address
    for (const EventLine &e : events)
        if (e["ev"] == "pin")
            pinned_addr[e.number("handle")] = address_of(e);
    CHECK(pinned_addr.size() == 6); // the host memory and the 3 mappings too
    for (const EventLine &e : events) {
        if (e["ev"] != "unpin")
            continue;
        const uint64_t addr = pinned_addr[e.number("handle")];
        INFO("unpin of the pin at " << std::hex << addr);
        auto own = std::find_if(freed.begin(), freed.end(), [&](const Freed &f) {
            return f.addr <= addr && addr < f.addr + f.size;
        });
        REQUIRE(own != freed.end());
        // An unpin's time is when its release began; a free's, before
        // the real free ran: the release belongs to a later free.
        CHECK(e.number("ts_ns") >= own->ts);
    }
}

// Runs over_release plain and hooked with `environment`; checks what every
// such run must show and that its two teardowns ended its two pins.
std::string check_over_release(const std::map<std::string, std::string> &environment)
{
    const BothRuns both = run_both("GDRHOOKTEST_OVER_RELEASE", environment);
    const std::vector<EventLine> &events = both.events;
    // Both contexts' memory pinned, and unpinned by its context's teardown,
    // not left to the exit.
    CHECK(count_events(events, "pin") == 2);
    size_t teardowns = 0;
    for (const EventLine &e : events)
        if (e["ev"] == "ctx_destroy" && e.number("rc") == 0) {
            ++teardowns;
            CHECK(e.number("size") == 4 << 20); // the memory made in it
        }
    CHECK(teardowns == 2);
    return both.plain_lines;
}

TEST_CASE("A context release the driver refuses leaves the next last release a teardown")
{
    SECTION("one release more than the retains")
    {
        // CUDA_ERROR_INVALID_CONTEXT for the extra one.
        CHECK(check_over_release({}) ==
              "release 1 rc=0\nrelease 2 rc=201\nrelease 3 rc=0\nfrees_made=0\n");
    }
    SECTION("the last reference's release refused once")
    {
        CHECK(check_over_release({{"FAKECUDA_FAIL", "cuDevicePrimaryCtxRelease_v2:1:999"}}) ==
              "release 1 rc=999\nrelease 2 rc=0\nrelease 3 rc=0\nfrees_made=0\n");
    }
}
