// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The per-process byte cap of the event log (GDRHOOK_LOG_MAX_BYTES,
// docs/log-format.md "The byte cap and the `capped` line"): past it no
// event is written, the log ends with one `capped` line that counts them,
// stderr says the same, and `gdrhook log check` fails on the log.
#include "program_runs.h"

#include <fstream>

namespace {

std::vector<std::string> lines_of(const std::string &path)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace

TEST_CASE("a log past its byte cap ends with one line counting the events not written, and log "
          "check fails on it")
{
    std::string log = make_temp_dir() + "/events.jsonl";
    RunResult whole = run_test_program("GDRHOOKTEST_DEMO", {}, log, true);
    INFO(whole.output);
    REQUIRE(whole.exit_status == 0);
    const std::vector<std::string> all = lines_of(log);
    long long all_bytes = 0;
    for (const std::string &line : all)
        all_bytes += static_cast<long long>(line.size()) + 1;
    // Half the demo's log: past its `process` line, short of its events.
    const long long cap = all_bytes / 2;
    REQUIRE(static_cast<long long>(all.front().size()) + 1 < cap);

    std::string capped_log = make_temp_dir() + "/events.jsonl";
    RunResult run = run_test_program("GDRHOOKTEST_DEMO", {}, capped_log, true,
                                     {{"GDRHOOK_LOG_MAX_BYTES", std::to_string(cap)}});
    INFO(run.output);
    REQUIRE(run.exit_status == 0); // the program never notices
    const std::vector<std::string> lines = lines_of(capped_log);
    REQUIRE(lines.size() >= 2);
    long long bytes_before_last = 0;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
        bytes_before_last += static_cast<long long>(lines[i].size()) + 1;
        CHECK(lines[i].find("\"ev\":\"capped\"") == std::string::npos); // one, the last
    }
    CHECK(bytes_before_last <= cap);
    EventLine last;
    REQUIRE(parse_event_line(lines.back(), last));
    CHECK(last["ev"] == "capped");
    CHECK(last.number("max_bytes") == cap);
    // Every event of the uncapped run is written or counted: the demo
    // does the same each run.
    const long long not_written = last.number("not_written");
    CHECK(not_written > 0);
    CHECK(static_cast<long long>(lines.size()) - 1 + not_written ==
          static_cast<long long>(all.size()));
    // stderr says the same.
    CHECK(run.output.find("reached GDRHOOK_LOG_MAX_BYTES (" + std::to_string(cap) +
                          " bytes): " + std::to_string(not_written) + " event(s) not written") !=
          std::string::npos);

    RunResult check = run_cli({"log", "check", capped_log});
    INFO(check.output);
    CHECK(check.exit_status == 1);
    CHECK(check.output.find("log capped: ") != std::string::npos);
    CHECK(check.output.find(std::to_string(not_written) + " event(s) not written") !=
          std::string::npos);
    // Counted, not failing, where the user expects it.
    RunResult allowed = run_cli({"log", "check", "--allow", "log-capped", capped_log});
    INFO(allowed.output);
    CHECK(allowed.exit_status == 0);
}
