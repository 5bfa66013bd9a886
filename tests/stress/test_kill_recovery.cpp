// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// kill -9 at random moments, 100 times: tests/programs/endings churns
// (threads allocating and freeing flat out under the shim, pin-on-alloc)
// and counts each free in a file of its own after the free returned. After
// each kill, `gdrhook log recover` must bring the log to every free the
// program counted, each once: a free can have returned and been recorded
// without being counted yet, at most one a thread, so
// counted <= recovered <= counted + threads. The recovered log must pass
// `gdrhook log check` (the pins the process held went with it).
#include "event_lines.h"
#include "tools/cli/read/flat_line.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <signal.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_set>

namespace fs = std::filesystem;
using gdrhook::cli::value_of;

namespace {

constexpr int kills = 100;
constexpr int threads = 4;

long counted_frees(const std::string &path)
{
    long count = 0;
    FILE *f = fopen(path.c_str(), "rb");
    if (f) {
        if (fread(&count, sizeof count, 1, f) != 1)
            count = 0;
        fclose(f);
    }
    return count;
}

// Frees in the process's logs, and frees logged twice (the same queue
// position: a recovery that wrote again what the process had written).
struct Frees {
    long logged = 0;
    long twice = 0;
    long died = 0;
    long journals = 0;
};

Frees frees_in(const std::string &dir)
{
    Frees f;
    for (const auto &entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 8 && name.compare(name.size() - 8, 8, ".journal") == 0)
            ++f.journals;
        if (entry.path().extension() != ".jsonl")
            continue;
        std::ifstream in(entry.path());
        std::unordered_set<std::string> seqs;
        std::string line;
        while (std::getline(in, line)) {
            const std::string_view ev = value_of(line, "ev");
            f.died += ev == "died";
            if (ev != "free")
                continue;
            ++f.logged;
            if (!seqs.insert(std::string(value_of(line, "seq"))).second)
                ++f.twice;
        }
    }
    return f;
}

int tool(const std::vector<std::string> &args, std::string &output)
{
    std::vector<std::string> argv = {build_path("GDRHOOKTEST_CLI")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult run = run_program(argv, {});
    output = run.output;
    return run.exit_status;
}

} // namespace

TEST_CASE("kill -9 at random moments, 100 times: recover brings back every free counted", "[kill]")
{
    std::mt19937 random(std::random_device{}());
    // From before the shim has started to well into the churn.
    std::uniform_int_distribution<int> wait_us(0, 150000);
    long total_counted = 0, total_recovered = 0, killed_before_counting = 0;
    const std::string base = make_temp_dir();
    for (int round = 0; round < kills; ++round) {
        const std::string dir = base + "/kill" + std::to_string(round);
        REQUIRE(mkdir(dir.c_str(), 0755) == 0);
        const std::string counts = dir + "/counts";
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0)
            exec_program(
                {build_path("GDRHOOKTEST_ENDINGS"), "churn", "0", counts, std::to_string(threads)},
                pinning_environment(dir + "/events.%p.jsonl"));
        std::this_thread::sleep_for(std::chrono::microseconds(wait_us(random)));
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        REQUIRE(WIFSIGNALED(status));
        REQUIRE(WTERMSIG(status) == SIGKILL);

        const long counted = counted_frees(counts);
        std::string said;
        INFO("round " << round << ", " << counted << " frees counted");
        REQUIRE(tool({"log", "recover", dir}, said) == 0);
        INFO(said);
        const Frees f = frees_in(dir);
        CHECK(f.journals == 0);
        CHECK(f.twice == 0);
        CHECK(f.logged >= counted);
        CHECK(f.logged <= counted + threads);
        killed_before_counting += f.logged - counted;
        // A process killed before it recorded anything leaves no log.
        CHECK(f.died ==
              (f.logged || fs::exists(dir + "/events." + std::to_string(pid) + ".jsonl") ? 1 : 0));
        if (f.died) {
            std::string checked;
            CHECK(tool({"log", "check", dir}, checked) == 0);
            INFO(checked);
        }
        total_counted += counted;
        total_recovered += f.logged;
        fs::remove_all(dir); // the churn writes fast: keep the disk
    }
    WARN(kills << " kills: " << total_counted << " frees counted, " << total_recovered
               << " in the recovered logs (" << killed_before_counting
               << " made and recorded but killed before the program counted them)");
}
