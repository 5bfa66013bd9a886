// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Helpers the CLI's unit tests share: temporary files, and replaying
// JSON lines through any consumer with an add(event, where).
#pragma once

#include "read/log_reader.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace gdrhook::cli::test {

// A file in the temporary directory, removed at the end of the test.
class TempFile {
public:
    explicit TempFile(const std::string &contents)
    {
        const char *dir = std::getenv("TMPDIR");
        path_ = std::string(dir ? dir : "/tmp") + "/gdrhook-cli-test-XXXXXX";
        int fd = mkstemp(path_.data());
        REQUIRE(fd >= 0);
        close(fd);
        std::ofstream(path_, std::ios::binary) << contents;
    }
    ~TempFile() { unlink(path_.c_str()); }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

// Parses each line (all must be well formed) and feeds it to @p consumer,
// with its 1-based line number in file 0.
template <typename Consumer> void replay(Consumer &consumer, const std::vector<std::string> &lines)
{
    StringTable strings;
    LineParser parser(strings);
    uint64_t number = 0;
    for (const std::string &line : lines) {
        LogEvent event;
        INFO(line);
        REQUIRE(parser.parse(line, event) == "");
        consumer.add(event, SourceLocation{0, ++number});
    }
}

// One event line in the shim's format, with extra keys appended.
inline std::string line(int64_t ts, int pid, const char *ev, const char *api, uint64_t addr,
                        uint64_t size, int rc = 0, const std::string &extra = "")
{
    char text[512];
    std::snprintf(
        text, sizeof text,
        R"({"ts_ns":%lld,"pid":%d,"tid":%d,"ev":"%s","api":"%s","addr":"0x%llx","size":%llu,"dev":0,"rc":%d%s})",
        static_cast<long long>(ts), pid, pid, ev, api, static_cast<unsigned long long>(addr),
        static_cast<unsigned long long>(size), rc, extra.c_str());
    return text;
}

// A `process` line, the first line of a log (rank < 0: none given).
inline std::string process_line(int64_t ts, int pid, const std::string &host, int rank,
                                const std::string &extra = "")
{
    std::string text =
        R"({"ts_ns":)" + std::to_string(ts) + R"(,"seq":0,"pid":)" + std::to_string(pid) +
        R"(,"tid":)" + std::to_string(pid) +
        R"(,"ev":"process","api":"gdrhook","addr":"0x0","size":0,"dev":-1,"rc":0,"via":"symbol","host":")" +
        host + '"';
    if (rank >= 0)
        text += R"(,"rank":)" + std::to_string(rank);
    return text + R"(,"ppid":1,"cmdline":["python3","train.py"],"version":"0.1.0")" + extra + "}";
}

// Like replay(), for the logs of several files read together: each line
// comes with the index of its file, and is numbered within that file.
template <typename Consumer>
void replay_files(Consumer &consumer, const std::vector<std::pair<uint32_t, std::string>> &lines)
{
    StringTable strings;
    LineParser parser(strings);
    std::vector<uint64_t> numbers;
    for (const auto &[file, text] : lines) {
        LogEvent event;
        INFO(text);
        REQUIRE(parser.parse(text, event) == "");
        if (numbers.size() <= file)
            numbers.resize(file + 1, 0);
        consumer.add(event, SourceLocation{file, ++numbers[file]});
    }
}

} // namespace gdrhook::cli::test
