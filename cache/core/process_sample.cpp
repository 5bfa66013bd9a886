// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/core/process_sample.h"

#include "cache/base/safe_file.h"
#include "cache/base/unique_fd.h"
#include "cache/events/event_clock.h"
#include "cache/events/event_pipeline.h"
#include "cache/prim/hot_line.h"
#include "cache/registration/registration_cache.h"

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace gdrhook {

uint64_t resident_bytes()
{
    // "size resident shared text lib data dt", in pages.
    const Result<std::string> read = read_small_file("/proc/self/statm", 128);
    const std::string &text = *read;
    if (!read || text.empty())
        return 0;
    char *end = nullptr;
    strtoull(text.c_str(), &end, 10);
    unsigned long long pages = strtoull(end, nullptr, 10);
    long page_size = sysconf(_SC_PAGESIZE);
    return pages * static_cast<uint64_t>(page_size > 0 ? page_size : 4096);
}

uint64_t open_fd_count()
{
    UniqueFd folder = std::move(open_folder(AT_FDCWD, "/proc/self/fd")->fd);
    if (!folder.valid())
        return 0;
    // getdents64 into a buffer of our own: no opendir, so no allocation
    // and no DIR to leak.
    const std::string own = std::to_string(folder.get());
    alignas(dirent64) char buffer[4096];
    uint64_t count = 0;
    for (;;) {
        ssize_t length = getdents64(folder.get(), buffer, sizeof buffer);
        if (length <= 0)
            break;
        for (ssize_t offset = 0; offset < length;) {
            const auto *entry = reinterpret_cast<const dirent64 *>(buffer + offset);
            const char *name = entry->d_name;
            if (name[0] != '.' && own != name)
                ++count;
            offset += entry->d_reclen;
        }
    }
    return count;
}

void write_process_sample(EventPipeline &pipeline)
{
    ProcessSample sample;
    sample.rss_bytes = resident_bytes();
    sample.fds = open_fd_count();
    // Without a cache (GDRHOOK_PIN=off, or no gdrhook_get yet) nothing is
    // pinned; never create one from here.
    if (RegistrationCache *cache = hot_line.cache.load(std::memory_order_acquire)) {
        PinnedNow pinned = cache->pinned_now();
        sample.pins = pinned.pins;
        sample.pinned_bytes = pinned.bytes;
    }
    Event event =
        make_event(EventKind::sample, "gdrhook_worker", Via::symbol, MemoryKind::none, 0, 0);
    event.sample = &sample;
    pipeline.write_from_consumer(event);
}

} // namespace gdrhook
