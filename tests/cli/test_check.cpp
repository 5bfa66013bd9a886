// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "check.h"
#include "test_support.h"

#include <sstream>

using namespace gdrhook::cli;
using namespace gdrhook::cli::test;

namespace {

const std::string pin_h1 = R"(,"backend":"dmabuf","handle":1)";
const std::string h1 = R"(,"handle":1)";

CheckResult check(const std::vector<std::string> &lines)
{
    Checker checker;
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
    auto r = check({line(1, 1, "alloc", "a", 0x1000, 4096), line(2, 1, "pin", "a", 0x1000, 4096, 0, pin_h1),
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
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1),
                    line(2, 1, "free", "f", 0x1000, 4096)});
    CHECK(r.passed());
}

TEST_CASE("a pin never unpinned fails and names its line", "[check]")
{
    auto r = check({line(1, 1, "alloc", "a", 0x1000, 4096), line(2, 1, "pin", "a", 0x1000, 4096, 0, pin_h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::never_unpinned);
    CHECK(r.problems[0].where.line == 2);
    std::string text = printed(r);
    CHECK(text.find("log.jsonl:2: pin never unpinned: pid 1, handle 1") == 0);
    CHECK(text.find("FAILED") != std::string::npos);
}

TEST_CASE("a free of pinned memory with no unpin fails, naming the free and the pin", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 8192, 0, pin_h1),
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
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 1, "free", "f", 0x1000, 4096, 1),
                    line(3, 1, "free", "f", 0x2000, 4096), line(4, 2, "free", "f", 0x1000, 4096),
                    line(5, 1, "free", "cuMemRelease", 0x1000, 4096)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::never_unpinned);
    CHECK_FALSE(r.problems[0].has_free);
}

TEST_CASE("verify-mode findings fail the check; other errors do not", "[check]")
{
    auto r = check({line(1, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"verify: buffer id differs")"),
                    line(2, 1, "error", "lookup", 0x1000, 0, 0, R"(,"msg":"stale registration")"),
                    line(3, 1, "error", "export", 0x1000, 0, 1, R"(,"msg":"out of BAR1")")});
    CHECK(r.total_problems == 2);
    CHECK(r.other_errors == 1);
    CHECK(r.problems[0].where.line == 1);
    CHECK(r.problems[1].where.line == 2);
    CHECK(printed(r).find("log.jsonl:1: verify-mode finding: pid 1, lookup") == 0);
}

TEST_CASE("a revocation ends a pin, and the unpin that frees its handle is not a double release", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 1, "revoke", "cb", 0x1000, 4096, 0, h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    CHECK(r.passed());
}

TEST_CASE("releasing a handle twice fails", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 1, "unpin", "f", 0x1000, 4096, 0, h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::unmatched_release);
    CHECK(r.problems[0].where.line == 3);
}

TEST_CASE("a failed unpin leaves the pin held, and the report says so", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 1, "unpin", "f", 0x1000, 4096, 5, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].has_failed_unpin);
    CHECK(printed(r).find("an unpin at log.jsonl:2 failed (rc 5)") != std::string::npos);
}

TEST_CASE("pinning a held handle again reports the lost pin", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 1, "pin", "a", 0x3000, 4096, 0, pin_h1),
                    line(3, 1, "unpin", "f", 0x3000, 4096, 0, h1)});
    REQUIRE(r.total_problems == 1);
    CHECK(r.problems[0].kind == ProblemKind::pin_replaced);
    CHECK(r.problems[0].where.line == 1);
}

TEST_CASE("handles are per process", "[check]")
{
    auto r = check({line(1, 1, "pin", "a", 0x1000, 4096, 0, pin_h1), line(2, 2, "pin", "a", 0x1000, 4096, 0, pin_h1),
                    line(3, 1, "unpin", "f", 0x1000, 4096, 0, h1), line(4, 2, "unpin", "f", 0x1000, 4096, 0, h1)});
    CHECK(r.passed());
}
