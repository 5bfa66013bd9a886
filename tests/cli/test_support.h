// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Helpers the CLI's unit tests share: temporary files, and replaying
// JSON lines through any consumer with an add(event, where).
#pragma once

#include "log_reader.h"

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
template <typename Consumer>
void replay(Consumer &consumer, const std::vector<std::string> &lines)
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
    std::snprintf(text, sizeof text,
                  R"({"ts_ns":%lld,"pid":%d,"tid":%d,"ev":"%s","api":"%s","addr":"0x%llx","size":%llu,"dev":0,"rc":%d%s})",
                  static_cast<long long>(ts), pid, pid, ev, api, static_cast<unsigned long long>(addr),
                  static_cast<unsigned long long>(size), rc, extra.c_str());
    return text;
}

} // namespace gdrhook::cli::test

