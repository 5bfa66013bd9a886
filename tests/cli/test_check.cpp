// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "log/log_subcommands.h"
#include "report/check.h"
#include "test_support.h"

#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

const std::string pin_h1 = R"(,"backend":"dmabuf","handle":1)";
const std::string h1 = R"(,"handle":1)";

CheckResult check(const std::vector<std::string> &lines, const CheckOptions &options = {})
{
    Checker checker(options);
    replay(checker, lines);
    return checker.finish();
}

std::string printed(const CheckResult &result)
{
    std::ostringstream out;
    print_check(out, result, {"log.jsonl"}, 0);
    return out.str();
}

} // namespace

TEST_CASE("a pin followed by its unpin passes", "[check]")
{
    auto r = check(
        {line(1, 1, "alloc", "a", 0x1000, 4096), line(2, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
         line(3, 1, "free", "f", 0x1000, 4096), line(4, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    CHECK(r.passed());
    CHECK(r.pins == 1);
    CHECK(r.releases == 1);
    CHECK(printed(r).find("gdrhook log check: OK") != std::string::npos);
}

TEST_CASE("an unpin logged before its free passes", "[check]")
{
    // When the hook waits for the worker, the unpin is recorded before the
    // free's own line, which carries the free's result.
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1),
                    line(2, 1, "free", "f", 0x1000, 4096)});
    CHECK(r.passed());
}

TEST_CASE("a pin never unpinned fails and names its line", "[check]")
{
    auto r = check(
        {line(1, 1, "alloc", "a", 0x1000, 4096), line(2, 1, "pin", "a", 0x1000, 4096, 0, pin_h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::never_unpinned);
    CHECK(r.problems[0].where.line == 2);
    std::string text = printed(r);
    CHECK(text.find("log.jsonl:2: pin never unpinned: pid 1, handle 1") == 0);
    CHECK(text.find("FAILED") != std::string::npos);
}

TEST_CASE("a free of pinned memory with no unpin fails, naming the free and the pin", "[check]")
{
    auto r =
        check({line(1, 1, "pin", "a", 0x1000, 8192, 0, pin_h1),
               line(2, 1, "free", "cuMemFree_v2", 0x2000, 4096), // overlaps the pin's second page
               line(3, 1, "alloc", "a", 0x1000, 8192)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::freed_while_pinned);
    CHECK(r.problems[0].where.line == 2);
    CHECK(r.problems[0].pinned_at.line == 1);
    CHECK(printed(r).find("log.jsonl:2: free of pinned memory without unpin") == 0);
    CHECK(printed(r).find("pinned at log.jsonl:1") != std::string::npos);
}

TEST_CASE("a failed free or a free elsewhere does not count against a pin", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "free", "f", 0x1000, 4096, 1), line(3, 1, "free", "f", 0x2000, 4096),
                    line(4, 2, "free", "f", 0x1000, 4096),
                    line(5, 1, "free", "cuMemRelease", 0x1000, 4096)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::never_unpinned);
    CHECK_FALSE(r.problems[0].has_free);
}

TEST_CASE("verify-mode findings and other error events both fail the check", "[check]")
{
    auto r =
        check({line(1, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"verify: buffer id differs")"),
               line(2, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"stale registration")"),
               line(3, 1, "error", "export", 0x1000, 0, 1, R"(,"msg":"out of BAR1")")});
    REQUIRE(r.total_problems == 3);
    CHECK(r.problems[0].where.line == 1);
    CHECK(r.problems[1].where.line == 2);
    CHECK(r.problems[2].where.line == 3);
    CHECK(printed(r).find("log.jsonl:1: verify-mode finding: pid 1, lookup") == 0);
}

TEST_CASE(
    "an error event that is not a verify finding fails the check, naming its line and message",
    "[check]")
{
    auto r = check({line(1, 1, "alloc", "cuMemAlloc_v2", 0x1000, 4096),
                    line(2, 1, "error", "cuMemAlloc_v2", 0x1000, 4096, 2,
                         R"(,"msg":"pin failed: out of BAR1")")});
    CHECK_FALSE(r.passed());
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].where.line == 2);
    std::string text = printed(r);
    CHECK(text.find("log.jsonl:2: error event: pid 1, cuMemAlloc_v2 0x1000 + 4 KiB (rc 2): pin "
                    "failed: out of BAR1") == 0);
    CHECK(text.find("gdrhook log check: FAILED") != std::string::npos);
}

TEST_CASE("a revoked pin never followed by its unpin fails, naming the revoke and the pin",
          "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "revoke", "cb", 0x1000, 4096, 0, h1),
                    line(3, 1, "free", "f", 0x1000, 4096)});
    CHECK_FALSE(r.passed());
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].where.line == 2);
    std::string text = printed(r);
    CHECK(text.find(
              "log.jsonl:2: revoked pin never unpinned: pid 1, handle 1 (0x1000 + 4 KiB, pinned at "
              "log.jsonl:1) was revoked here and no unpin of it follows") == 0);
}

TEST_CASE("a revoked handle pinned again before its unpin is reported at the revoke", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "revoke", "cb", 0x1000, 4096, 0, h1),
                    line(3, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(4, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].where.line == 2);
    CHECK(printed(r).find("log.jsonl:2: revoked pin never unpinned") == 0);
}

TEST_CASE("a revocation ends a pin, and the unpin that frees its handle is not a double release",
          "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "revoke", "cb", 0x1000, 4096, 0, h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    CHECK(r.passed());
}

TEST_CASE("releasing a handle twice fails", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "unpin", "f", 0x1000, 4096, 0, h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::unmatched_release);
    CHECK(r.problems[0].where.line == 3);
}

TEST_CASE("a failed unpin leaves the pin held, and the report says so", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "unpin", "f", 0x1000, 4096, 5, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].has_failed_unpin);
    CHECK(printed(r).find("an unpin at log.jsonl:2 failed (rc 5)") != std::string::npos);
}

TEST_CASE("pinning a held handle again reports the lost pin", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "pin", "a", 0x3000, 4096, 0, pin_h1),
                    line(3, 1, "unpin", "f", 0x3000, 4096, 0, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::pin_replaced);
    CHECK(r.problems[0].where.line == 1);
}

TEST_CASE("handles are per process", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 2, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1),
                    line(4, 2, "unpin", "f", 0x1000, 4096, 0, h1)});
    CHECK(r.passed());
}

TEST_CASE("--allow error lets error events pass, counted, but not verify findings", "[check]")
{
    CheckOptions options;
    REQUIRE(add_allowance(options, "error"));
    std::vector<std::string> lines = {
        line(1, 1, "error", "cuMemAlloc_v2", 0x1000, 4096, 2,
             R"(,"msg":"pin failed: out of BAR1")"),
        line(2, 1, "error", "cuMemAlloc_v2", 0x2000, 4096, 999, R"(,"msg":"export failed")")};
    auto r = check(lines, options);
    CHECK(r.passed());
    CHECK(r.allowed_by_kind[static_cast<size_t>(ProblemKind::error_event)] == 2);
    CHECK(printed(r).find("gdrhook log check: OK") != std::string::npos);
    CHECK(printed(r).find("; allowed: error 2") != std::string::npos);

    lines.push_back(
        line(3, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"verify: buffer id differs")"));
    r = check(lines, options);
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::verify_finding);
}

TEST_CASE("--allow error:TEXT allows only the error events whose msg starts with TEXT", "[check]")
{
    CheckOptions options;
    REQUIRE(add_allowance(options, "error:pin failed"));
    auto r = check(
        {line(1, 1, "error", "cuMemAlloc_v2", 0x1000, 4096, 2,
              R"(,"msg":"pin failed: out of BAR1")"),
         line(2, 1, "error", "cuMemAlloc_v2", 0x2000, 4096, 999, R"(,"msg":"export failed")")},
        options);
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].where.line == 2);
    CHECK(r.allowed_by_kind[static_cast<size_t>(ProblemKind::error_event)] == 1);
}

TEST_CASE("--allow takes each problem kind by name, and refuses anything else", "[check]")
{
    for (int k = 0; k < problem_kind_count; ++k) {
        CheckOptions options;
        auto kind = static_cast<ProblemKind>(k);
        INFO(allow_name(kind));
        CHECK(add_allowance(options, allow_name(kind)));
        CHECK(options.allowed[static_cast<size_t>(k)]);
    }
    CheckOptions options;
    CHECK_FALSE(add_allowance(options, "errors"));
    CHECK_FALSE(add_allowance(options, "error:"));
    CHECK_FALSE(add_allowance(options, ""));

    REQUIRE(add_allowance(options, "revoked-never-unpinned"));
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(2, 1, "revoke", "cb", 0x1000, 4096, 0, h1)},
                   options);
    CHECK(r.passed());
    CHECK(r.allowed_by_kind[static_cast<size_t>(ProblemKind::revoked_never_unpinned)] == 1);
}

TEST_CASE("log check --help names every kind --allow takes, as the check spells it")
{
    CLI::App app;
    add_log(app);
    const CLI::Option *allow =
        app.get_subcommand("log")->get_subcommand("check")->get_option("--allow");
    const std::string help = allow->get_description();
    for (int k = 0; k < problem_kind_count; ++k) {
        const std::string name = allow_name(static_cast<ProblemKind>(k));
        INFO(name);
        CHECK(help.find(name) != std::string::npos);
        CheckOptions scratch;
        CHECK(add_allowance(scratch, name));
    }
    CHECK(help.find("error:TEXT") != std::string::npos);
}
