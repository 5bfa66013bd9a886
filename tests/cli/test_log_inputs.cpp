// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/log_inputs.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace gdrhook::cli;
namespace fs = std::filesystem;

namespace {

// A folder of the layout a job leaves: a folder per host, a file per rank.
class JobFolder {
public:
    JobFolder()
    {
        const char *dir = std::getenv("TMPDIR");
        std::string pattern = std::string(dir ? dir : "/tmp") + "/gdrhook-inputs-XXXXXX";
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        root = pattern;
        for (const char *name : {"b/rank1.jsonl", "a/rank0.jsonl", "a/rank2.jsonl", "a/notes.txt",
                                 "top.jsonl", "empty/sub/readme"}) {
            fs::create_directories((fs::path(root) / name).parent_path());
            std::ofstream(fs::path(root) / name) << "{}\n";
        }
    }
    ~JobFolder() { fs::remove_all(root); }
    std::string root;
};

} // namespace

TEST_CASE("a folder stands for every .jsonl below it, in name order", "[inputs]")
{
    JobFolder job;
    LogInputs in = expand_log_inputs({job.root});
    CHECK(in.errors.empty());
    CHECK(in.files ==
          std::vector<std::string>{job.root + "/a/rank0.jsonl", job.root + "/a/rank2.jsonl",
                                   job.root + "/b/rank1.jsonl", job.root + "/top.jsonl"});
}

TEST_CASE("a pattern the shell left alone is expanded; a file named twice is read once", "[inputs]")
{
    JobFolder job;
    LogInputs in = expand_log_inputs({job.root + "/*/rank*.jsonl", job.root + "/a/rank0.jsonl",
                                      job.root + "/a/../a/rank2.jsonl"});
    CHECK(in.errors.empty());
    CHECK(in.files == std::vector<std::string>{job.root + "/a/rank0.jsonl",
                                               job.root + "/a/rank2.jsonl",
                                               job.root + "/b/rank1.jsonl"});
}

TEST_CASE("a pattern that matches nothing, or a folder without logs, is an error", "[inputs]")
{
    JobFolder job;
    LogInputs in =
        expand_log_inputs({job.root + "/c/*.jsonl", job.root + "/empty", job.root + "/top.jsonl"});
    CHECK(in.files == std::vector<std::string>{job.root + "/top.jsonl"});
    REQUIRE(in.errors.size() == 2);
    CHECK(in.errors[0] == "no file matches '" + job.root + "/c/*.jsonl'");
    CHECK(in.errors[1] == "no *.jsonl file under '" + job.root + "/empty'");
}

TEST_CASE("a name that is neither a file, a folder nor a pattern is kept for the reader to report",
          "[inputs]")
{
    LogInputs in = expand_log_inputs({"/nonexistent/x.jsonl"});
    CHECK(in.errors.empty());
    CHECK(in.files == std::vector<std::string>{"/nonexistent/x.jsonl"});
}
