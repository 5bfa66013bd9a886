// SPDX-License-Identifier: GPL-2.0-only OR MIT
// gdrhook-jobpins KIB: a job's task pinning through /dev/gdrhook, as the
// slurm step runs it under srun (guest/slurm_job.sh). Not root, it opens
// the node, pins KIB of host memory (the locked-memory limit the job was
// given) and is refused one page more with ENOMEM; it exits with the pin
// still held, for the step's end to release it. Exit status 0 only when
// all of that held.
#include "unprivileged.hpp"

int main(int argc, char **argv)
{
    using namespace vmtest;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s KIB\n", argv[0]);
        return 2;
    }
    const size_t limit = std::strtoull(argv[1], nullptr, 10) * 1024;
    rlimit r{};
    CHECK(::getrlimit(RLIMIT_MEMLOCK, &r) == 0);
    std::printf("job_pins: uid %u, memlock %llu KiB\n", ::geteuid(),
                static_cast<unsigned long long>(r.rlim_cur / 1024));
    CHECK(::geteuid() != 0);
    CHECK(limit > 0 && limit % kPage == 0);
    Gdrhook dev;
    CHECK(dev.ok());
    char *pages = map_touched_pages(limit / kPage + 1);
    uint64_t whole = 0, more = 0;
    CHECK_OK(pin_host(dev, pages, limit, &whole));
    CHECK_ERR(pin_host(dev, pages + limit, kPage, &more), ENOMEM);
    std::printf("job_pins: pinned %zu KiB, refused one page more (ENOMEM); exiting with the pin "
                "held\n",
                limit / 1024);
    // Not through the destructors: the file stays open, its pin held,
    // until the process is gone.
    std::_Exit(0);
}
