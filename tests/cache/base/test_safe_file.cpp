// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The one way gdrhook opens a file (cache/base/safe_file.h): no link
// followed, nothing waited on, only regular files of the expected owner,
// close-on-exec; a file replaced whole or not at all.
#include "cache/base/safe_file.h"
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace gdrhook;

namespace {

std::string contents(const std::string &path)
{
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("no use of the layer opens a file through a symbolic link")
{
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/target") << "target\n";
    REQUIRE(symlink((dir + "/target").c_str(), (dir + "/link").c_str()) == 0);
    const std::string name = dir + "/link";

    CHECK(open_for_reading(AT_FDCWD, name.c_str(), Owner::anyone()).why() == "is a symbolic link");
    CHECK(open_for_update(AT_FDCWD, name.c_str(), Owner::anyone()).why() == "is a symbolic link");
    CHECK(open_for_append(AT_FDCWD, name.c_str(), Owner::is(geteuid()), true, 0600).why() ==
          "is a symbolic link");
    CHECK(open_device(name.c_str()).why() == "is a symbolic link");
    CHECK(!create_exclusive(AT_FDCWD, name.c_str(), 0600).ok());
    CHECK(contents(dir + "/target") == "target\n");
}

TEST_CASE("a FIFO is refused at once, never waited on")
{
    const std::string fifo = make_temp_dir() + "/fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const OpenedFile read = open_for_reading(AT_FDCWD, fifo.c_str(), Owner::anyone());
    CHECK(!read.ok());
    CHECK(read.why() == "is not a regular file");
    const OpenedFile append =
        open_for_append(AT_FDCWD, fifo.c_str(), Owner::is(geteuid()), false, 0);
    CHECK(!append.ok());
    CHECK(append.why() == "is not a regular file");
    CHECK(read_small_file(fifo.c_str()).why() == "is not a regular file");
}

TEST_CASE("a file read for a report is a regular file with one name, and close-on-exec")
{
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/log") << "line\n";
    const OpenedFile opened =
        open_for_reading(AT_FDCWD, (dir + "/log").c_str(), Owner::anyone(), true);
    REQUIRE(opened.ok());
    CHECK((fcntl(opened->fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((fcntl(opened->fd.get(), F_GETFL) & O_NONBLOCK) == 0); // reads wait for the disk again
    REQUIRE(link((dir + "/log").c_str(), (dir + "/second").c_str()) == 0);
    CHECK(open_for_reading(AT_FDCWD, (dir + "/log").c_str(), Owner::anyone(), true).why() ==
          "has other names (hard links)");
    CHECK(open_for_reading(AT_FDCWD, dir.c_str(), Owner::anyone()).why() ==
          "is not a regular file");
}

TEST_CASE("a file replaced by rename is whole, and no temporary is left")
{
    const std::string dir = make_temp_dir();
    const std::string path = dir + "/metrics.prom";
    REQUIRE(replace_by_rename(path, "first\n", 0644).ok());
    REQUIRE(replace_by_rename(path, "second\n", 0644).ok());
    CHECK(contents(path) == "second\n");
    size_t files = 0;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
        files += entry.is_regular_file();
    CHECK(files == 1);
}

TEST_CASE("replace by rename refuses a symbolic link at the name and leaves its target alone")
{
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/target") << "target\n";
    REQUIRE(symlink((dir + "/target").c_str(), (dir + "/metrics.prom").c_str()) == 0);
    CHECK(replace_by_rename(dir + "/metrics.prom", "metrics\n", 0644).why() ==
          "is a symbolic link");
    CHECK(contents(dir + "/target") == "target\n");
    CHECK(std::filesystem::is_symlink(dir + "/metrics.prom"));
}

TEST_CASE("create_exclusive never opens a file that is already there")
{
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/there") << "there\n";
    const OpenedFile made = create_exclusive(AT_FDCWD, (dir + "/there").c_str(), 0600);
    CHECK(!made.ok());
    CHECK(made.system_error() == EEXIST);
    const OpenedFile fresh = create_exclusive(AT_FDCWD, (dir + "/new").c_str(), 0600);
    REQUIRE(fresh.ok());
    CHECK(fresh->created);
}

namespace {

size_t open_descriptors()
{
    size_t count = 0;
    for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++count;
    return count;
}

} // namespace

TEST_CASE("a file the layer opened closes when its holder goes; nobody closes it by hand")
{
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/log") << "line\n";
    const size_t before = open_descriptors();
    {
        const auto opened = open_for_reading(AT_FDCWD, (dir + "/log").c_str(), Owner::anyone());
        REQUIRE(opened.why().empty());
        CHECK(open_descriptors() == before + 1);
        const auto folder = open_folder(AT_FDCWD, dir.c_str());
        REQUIRE(folder.why().empty());
        const auto appended =
            open_for_append(folder->fd.get(), "log", Owner::is(geteuid()), false, 0600);
        REQUIRE(appended.why().empty());
        CHECK(open_descriptors() == before + 3);
    }
    CHECK(open_descriptors() == before);
    // Refused after the open (a second name): closed before the answer.
    REQUIRE(link((dir + "/log").c_str(), (dir + "/second").c_str()) == 0);
    CHECK(open_for_reading(AT_FDCWD, (dir + "/log").c_str(), Owner::anyone(), true).why() ==
          "has other names (hard links)");
    CHECK(open_descriptors() == before);
}
