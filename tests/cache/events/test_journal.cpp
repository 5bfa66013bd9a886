// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The journal file (cache/events/journal.h): made beside the log, locked
// by its process, holding the queue's cells; removed once everything is
// written.
#include "cache/events/event_pipeline.h"
#include "cache/events/journal.h"
#include "cache/events/journal_layout.h"
#include "event_lines.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

TEST_CASE("a journal is made beside the log, locked, and removed when everything is written")
{
    const std::string log = make_temp_dir() + "/events.jsonl";
    gdrhook::Journal journal;
    REQUIRE(journal.create(log, 64, gdrhook::EventPipeline::queue_cell_bytes, getpid()).ok());
    REQUIRE(journal.cells() != nullptr);
    const std::string path = journal.path();
    CHECK(path.compare(0, log.size() + 1, log + ".") == 0);
    CHECK(std::filesystem::exists(path));

    gdrhook::JournalHeader header{};
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(pread(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header));
    CHECK(memcmp(header.magic, gdrhook::journal_magic, sizeof header.magic) == 0);
    CHECK(header.pid == getpid());
    CHECK(header.capacity == 64);
    CHECK(std::string(header.log_name) == "events.jsonl");
    // Our own process holds the write lock: another process would see it.
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    REQUIRE(fcntl(fd, F_GETLK, &lock) == 0);
    close(fd);

    journal.remove();
    CHECK_FALSE(std::filesystem::exists(path));
    // The mapping stays for the queue's later pushes.
    CHECK(journal.cells() != nullptr);
}
