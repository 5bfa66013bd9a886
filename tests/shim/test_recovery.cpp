// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// However a process ends, every free it made is in its log, after
// `gdrhook log recover` where the ending runs no code of the shim's
// (abort, a fatal signal, SIGKILL): tests/programs/endings frees 200
// buffers under the shim with pin-on-alloc, counts each free in a file
// of its own after the free returned, and ends. The table printed at the
// end: ending x frees made, in the log before recover, after recover.
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <signal.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

constexpr long frees_made = 200;
constexpr int churn_threads = 16;

struct Row {
    std::string ending;
    long made = 0;
    long before = 0;
    long after = 0;
};

std::vector<Row> &table()
{
    static std::vector<Row> rows;
    return rows;
}

void print_table()
{
    std::ostringstream out;
    out << "\nending        frees made   in log before recover   in log after recover\n";
    for (const Row &row : table()) {
        char line[128];
        snprintf(line, sizeof line, "%-13s %10ld   %21ld   %20ld\n", row.ending.c_str(), row.made,
                 row.before, row.after);
        out << line;
    }
    std::cout << out.str() << std::flush;
}

// The counts the program stored in its file: [0] itself, [1] a forked child.
std::pair<long, long> read_counts(const std::string &path)
{
    long counts[2] = {0, 0};
    FILE *f = fopen(path.c_str(), "rb");
    if (f) {
        if (fread(counts, sizeof counts, 1, f) != 1)
            counts[0] = counts[1] = -1;
        fclose(f);
    }
    return {counts[0], counts[1]};
}

struct LogFacts {
    long frees = 0;
    long died = 0;
    long journals = 0;
};

// The complete lines of a log. A process killed by a signal may have
// died while it wrote its last line; that tail, with no newline after it,
// is not a line yet (gdrhook log recover cuts it). Every complete line
// must parse.
std::vector<EventLine> complete_lines(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    std::vector<EventLine> lines;
    size_t start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        EventLine line;
        INFO("line: " << text.substr(start, end - start));
        REQUIRE(parse_event_line(text.substr(start, end - start), line));
        lines.push_back(line);
    }
    return lines;
}

// Whether every log in `dir` ends with a whole line (what recovery leaves).
bool every_log_ends_whole(const std::string &dir)
{
    for (const auto &entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".jsonl")
            continue;
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        if (!text.empty() && text.back() != '\n')
            return false;
    }
    return true;
}

LogFacts facts_of(const std::string &dir)
{
    LogFacts facts;
    for (const auto &entry : fs::directory_iterator(dir)) {
        const std::string path = entry.path().string();
        if (path.size() > 8 && path.compare(path.size() - 8, 8, ".journal") == 0) {
            ++facts.journals;
            continue;
        }
        if (entry.path().extension() != ".jsonl")
            continue;
        for (const EventLine &e : complete_lines(path)) {
            facts.frees += e["ev"] == "free" && e.number("rc") == 0; // done, not refused
            facts.died += e["ev"] == "died";
        }
    }
    return facts;
}

std::string cli(const std::vector<std::string> &args, int &status)
{
    std::vector<std::string> argv = {build_path("GDRHOOKTEST_CLI")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult run = run_program(argv, {});
    status = run.exit_status;
    return run.output;
}

bool ends_by_signal(const std::string &ending)
{
    return ending == "abort" || ending == "segv" || ending == "sigterm" || ending == "sigkill";
}

std::string log_texts(const std::string &dir)
{
    std::string all;
    std::vector<std::string> names;
    for (const auto &entry : fs::directory_iterator(dir))
        names.push_back(entry.path().string());
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
        std::ifstream in(name, std::ios::binary);
        all += name + "\n" + std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
}

} // namespace

TEST_CASE("every free is in the log however the process ends, after recover where needed")
{
    const std::string ending = GENERATE("exit", "_exit", "_Exit", "exec", "abort", "segv",
                                        "sigterm", "sigkill", "fork_exit", "threads_exit");
    INFO("the program ends with " << ending);
    const std::string dir = make_temp_dir() + "/" + ending;
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    const std::string counts_file = dir + "/counts";
    RunResult run =
        run_program({build_path("GDRHOOKTEST_ENDINGS"), ending, std::to_string(frees_made),
                     counts_file, std::to_string(churn_threads)},
                    pinning_environment(dir + "/events.%p.jsonl"));
    INFO(run.output);
    const auto [own, child] = read_counts(counts_file);
    Row row{ending, own + child, facts_of(dir).frees, 0};

    // A copy of each journal, to play a recovery that died after it wrote
    // the log and before it removed the journal.
    const std::string kept = dir + "-journals";
    REQUIRE(mkdir(kept.c_str(), 0755) == 0);
    for (const auto &entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".journal")
            fs::copy_file(entry.path(), kept + "/" + entry.path().filename().string());

    int status = 0;
    std::string said = cli({"log", "recover", dir}, status);
    INFO(said);
    CHECK(status == 0);
    const LogFacts after = facts_of(dir);
    CHECK(every_log_ends_whole(dir));
    row.after = after.frees;
    table().push_back(row);
    if (table().size() == 10)
        print_table();

    CHECK(after.journals == 0);
    if (ending == "threads_exit") {
        // Threads go on freeing while the main thread ends the process: a
        // free may have returned without being counted yet, one a thread.
        CHECK(row.made >= frees_made);
        CHECK(row.after >= row.made);
        CHECK(row.after <= row.made + churn_threads);
    } else {
        // fork_exit: 4 buffers held across the fork, freed by the parent.
        CHECK(row.made == (ending == "fork_exit" ? frees_made + 4 : frees_made));
        CHECK(row.after == row.made);
    }
    // Only a process that ran no code of the shim's at its end has died.
    CHECK(after.died == (ends_by_signal(ending) ? 1 : 0));

    // A recovered log passes the check as a clean one does: the pins a
    // dead process held went with it.
    // Threads that go on while the process ends may pin what they allocate
    // after the shim unpinned everything: the exit releases those too.
    std::vector<std::string> check = {"log", "check", dir};
    if (ending == "threads_exit")
        check = {"log", "check", "--allow", "never-unpinned", dir};
    std::string checked = cli(check, status);
    INFO(checked);
    CHECK(status == 0);

    // Recovering again adds nothing, also from a journal left behind.
    const std::string before_again = log_texts(dir);
    for (const auto &entry : fs::directory_iterator(kept))
        fs::copy_file(entry.path(), dir + "/" + entry.path().filename().string());
    said = cli({"log", "recover", dir}, status);
    INFO(said);
    CHECK(status == 0);
    CHECK(facts_of(dir).journals == 0);
    CHECK(log_texts(dir) == before_again);
}

TEST_CASE("recovering the log of a process that still runs changes nothing")
{
    const std::string dir = make_temp_dir() + "/live";
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    const std::string counts_file = dir + "/counts";
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        exec_program({build_path("GDRHOOKTEST_ENDINGS"), "churn", "0", counts_file, "2"},
                     pinning_environment(dir + "/events.%p.jsonl"));
    // It never ends by itself: killed however this test ends.
    struct KillAtEnd {
        pid_t pid;
        ~KillAtEnd()
        {
            if (pid <= 0)
                return;
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
    } guard{pid};
    // Until it has freed something and its journal exists.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (read_counts(counts_file).first < 100 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(read_counts(counts_file).first >= 100);
    // Stopped, not ended: it still runs for recovery's purposes (it holds
    // its journal's lock), and its log stops growing. Left to churn, it
    // wrote gigabytes of log while a loaded machine read it, and the suite
    // timed out.
    REQUIRE(kill(pid, SIGSTOP) == 0);
    REQUIRE(facts_of(dir).journals == 1);

    int status = 0;
    std::string said = cli({"log", "recover", dir}, status);
    INFO(said);
    CHECK(status == 0);
    CHECK(said.find("still runs") != std::string::npos);
    CHECK(facts_of(dir).journals == 1);
    CHECK(facts_of(dir).died == 0);

    kill(pid, SIGKILL);
    int wait_status = 0;
    waitpid(pid, &wait_status, 0);
    guard.pid = -1; // reaped: nothing left to kill
    const long counted = read_counts(counts_file).first;
    said = cli({"log", "recover", dir}, status);
    INFO(said);
    CHECK(status == 0);
    const LogFacts after = facts_of(dir);
    CHECK(after.journals == 0);
    CHECK(after.died == 1);
    CHECK(after.frees >= counted);
    CHECK(after.frees <= counted + 2);
}
