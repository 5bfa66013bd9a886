// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "event_lines.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

const std::string &EventLine::operator[](const std::string &key) const
{
    static const std::string missing;
    auto it = fields.find(key);
    return it == fields.end() ? missing : it->second;
}

long long EventLine::number(const std::string &key) const
{
    return std::stoll((*this)[key], nullptr, 0);
}

bool parse_event_line(const std::string &line, EventLine &out)
{
    size_t i = 0;
    auto skip = [&] {
        while (i < line.size() && line[i] == ' ')
            ++i;
    };
    auto string_at = [&](std::string &s) {
        if (i >= line.size() || line[i] != '"')
            return false;
        size_t end = i + 1;
        while (end < line.size() && line[end] != '"')
            end += line[end] == '\\' ? 2 : 1; // escapes stay as written
        if (end >= line.size())
            return false;
        s = line.substr(i + 1, end - i - 1);
        i = end + 1;
        return true;
    };
    // An array or object value (the process line's), kept as written.
    auto nested_at = [&](std::string &s) {
        size_t start = i, depth = 0;
        bool in_string = false;
        for (; i < line.size(); ++i) {
            const char c = line[i];
            if (in_string) {
                if (c == '\\')
                    ++i;
                else if (c == '"')
                    in_string = false;
            } else if (c == '"') {
                in_string = true;
            } else if (c == '[' || c == '{') {
                ++depth;
            } else if ((c == ']' || c == '}') && --depth == 0) {
                s = line.substr(start, ++i - start);
                return true;
            }
        }
        return false;
    };
    skip();
    if (i >= line.size() || line[i++] != '{')
        return false;
    for (;;) {
        skip();
        std::string key, value;
        if (!string_at(key))
            return false;
        skip();
        if (i >= line.size() || line[i++] != ':')
            return false;
        skip();
        if (i < line.size() && line[i] == '"') {
            if (!string_at(value))
                return false;
        } else if (i < line.size() && (line[i] == '[' || line[i] == '{')) {
            if (!nested_at(value))
                return false;
        } else {
            size_t start = i;
            while (i < line.size() && (isalnum(line[i]) || line[i] == '-'))
                ++i;
            if (start == i)
                return false;
            value = line.substr(start, i - start);
        }
        out.fields[key] = value;
        skip();
        if (i < line.size() && line[i] == ',') {
            ++i;
            continue;
        }
        return i < line.size() && line[i] == '}' && i + 1 == line.size();
    }
}

std::vector<EventLine> read_event_file(const std::string &path)
{
    std::vector<EventLine> lines;
    std::ifstream in(path);
    std::string text;
    while (std::getline(in, text)) {
        EventLine line;
        INFO("line: " << text);
        REQUIRE(parse_event_line(text, line));
        lines.push_back(line);
    }
    return lines;
}

std::vector<EventLine> read_recorded_events(const std::string &path)
{
    std::vector<EventLine> events = read_event_file(path);
    events.erase(std::remove_if(events.begin(), events.end(),
                                [](const EventLine &e) { return e["ev"] == "process"; }),
                 events.end());
    return events;
}

namespace {

// A program still running after this long is killed and its test fails:
// a hang (a shim that recurses or deadlocks) costs a minute and a half,
// not meson's timeout of the whole test, which is what the mutation check
// (tests/mutants/run.py) would otherwise wait for. The slowest program
// the suites run takes seconds, under qemu-user too.
constexpr auto program_limit = std::chrono::seconds(90);

} // namespace

RunResult run_program(const std::vector<std::string> &argv,
                      const std::map<std::string, std::string> &env)
{
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // Its own process group, so that a kill at the limit reaches the
        // children it made too.
        setpgid(0, 0);
        dup2(pipe_fds[1], 1);
        dup2(pipe_fds[1], 2);
        close(pipe_fds[0]);
        exec_program(argv, env);
    }
    close(pipe_fds[1]);
    RunResult result;
    std::array<char, 4096> buffer;
    const auto deadline = std::chrono::steady_clock::now() + program_limit;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd readable = {pipe_fds[0], POLLIN, 0};
        int ready = left.count() > 0 ? poll(&readable, 1, static_cast<int>(left.count())) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            kill(-child, SIGKILL);
            kill(child, SIGKILL);
            result.output += "\n[test harness: killed, still running after " +
                             std::to_string(program_limit.count()) + " s]\n";
            break;
        }
        ssize_t n = read(pipe_fds[0], buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        result.output.append(buffer.data(), static_cast<size_t>(n));
    }
    close(pipe_fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

namespace {

std::string file_text(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

SplitRunResult run_program_apart(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &env)
{
    const std::string dir = make_temp_dir();
    const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        dup2(open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 1);
        dup2(open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 2);
        alarm(120); // kept across exec: a program that hangs ends the test
        exec_program(argv, env);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    SplitRunResult run;
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.out = file_text(out_path);
    run.err = file_text(err_path);
    return run;
}

size_t lines_with(const std::string &text, const std::string &part)
{
    std::istringstream lines(text);
    size_t n = 0;
    for (std::string line; std::getline(lines, line);)
        n += line.find(part) != std::string::npos;
    return n;
}

void exec_program(const std::vector<std::string> &argv,
                  const std::map<std::string, std::string> &env)
{
    for (const auto &[key, value] : env)
        setenv(key.c_str(), value.c_str(), 1);
    std::vector<char *> args;
    for (const auto &arg : argv)
        args.push_back(const_cast<char *>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    // A program of another architecture (a cross build's tests under
    // qemu-user, tests/meson.build): through the emulator, which passes
    // the environment, LD_PRELOAD included, on to the program.
    const char *emulator = getenv("GDRHOOKTEST_EXEC_WRAPPER");
    if (errno == ENOEXEC && emulator && *emulator) {
        args.insert(args.begin(), const_cast<char *>(emulator));
        execv(args[0], args.data());
    }
    _exit(127);
}

std::map<std::string, std::string> pinning_environment(const std::string &events)
{
    return {
        {"LD_PRELOAD", build_path("GDRHOOKTEST_SHIM")},
        {"LD_LIBRARY_PATH", build_path("GDRHOOKTEST_FAKE_DRIVER_DIR")},
        {"GDRHOOK_EVENTS", events},
        {"GDRHOOK_PIN", "alloc"},
        {"GDRHOOK_BACKEND", "dmabuf"},
        {"GDRHOOK_VERIFY", "1"},
        {"GDRHOOK_LOG_LEVEL", "info"},
    };
}

long long output_field(const std::string &output, const std::string &key)
{
    std::smatch m;
    INFO("looking for " << key << "=");
    REQUIRE(std::regex_search(output, m, std::regex("\\b" + key + "=(-?[0-9]+)")));
    return std::stoll(m[1]);
}

namespace {

// The folders make_temp_dir() made, removed when the test program ends
// (by the process that made them, not by a forked child that exits), so
// that runs do not pile up in the build folder; GDRHOOKTEST_KEEP_TMP=1
// keeps them to look at.
struct TempDirs {
    std::mutex mu;
    std::vector<std::string> made;
    const pid_t owner = getpid();
    ~TempDirs()
    {
        const char *keep = getenv("GDRHOOKTEST_KEEP_TMP");
        if (getpid() != owner || (keep && std::string(keep) == "1"))
            return;
        std::error_code ignored;
        for (const std::string &dir : made)
            std::filesystem::remove_all(dir, ignored);
    }
};

TempDirs &temp_dirs()
{
    static TempDirs dirs;
    return dirs;
}

} // namespace

std::string make_temp_dir()
{
    std::string pattern = build_path("GDRHOOKTEST_TMP") + "/run-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    REQUIRE(mkdtemp(buffer.data()) != nullptr);
    TempDirs &dirs = temp_dirs();
    std::lock_guard<std::mutex> lock(dirs.mu);
    dirs.made.push_back(buffer.data());
    return buffer.data();
}

std::string build_path(const char *variable)
{
    const char *value = getenv(variable);
    INFO("environment variable " << variable);
    REQUIRE(value != nullptr);
    return value;
}
