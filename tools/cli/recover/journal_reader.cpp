// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "recover/journal_reader.h"

#include "cache/base/safe_file.h"
#include "cache/events/queued_event.h"
#include "cache/prim/cycle_counter.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrhook::cli {
namespace {

// The journal's cell: the queue's sequence word, then the event
// (cache/events/event_queue.h).
struct Cell {
    uint64_t sequence;
    QueuedEvent item;
};
static_assert(sizeof(Cell) == journal_cell_bytes, "the queue's cell");

constexpr auto placeholder_kind = static_cast<EventKind>(UINT8_MAX); // queued_event.cpp

bool read_exactly(int fd, void *out, size_t bytes, uint64_t offset)
{
    auto *to = static_cast<char *>(out);
    while (bytes) {
        ssize_t got = pread(fd, to, bytes, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        to += got;
        offset += static_cast<uint64_t>(got);
        bytes -= static_cast<size_t>(got);
    }
    return true;
}

uint64_t clock_ns(clockid_t clock)
{
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A static string of the dead process: its offset from the anchor, in the
// copy of the shim's strings the journal holds. Out of the copy: not ours.
bool text_at(const std::string &strings, uint64_t anchor_offset, int32_t offset, std::string &out)
{
    out.clear();
    if (offset == queued_null_text)
        return true;
    const int64_t at = static_cast<int64_t>(anchor_offset) + offset;
    if (at < 0 || static_cast<uint64_t>(at) >= strings.size())
        return false;
    const size_t end = strings.find('\0', static_cast<size_t>(at));
    if (end == std::string::npos)
        return false;
    out.assign(strings, static_cast<size_t>(at), end - static_cast<size_t>(at));
    return true;
}

bool known_enums(const QueuedEvent &q)
{
    return q.kind <= EventKind::skip && q.via <= Via::runtime_entry && q.mem <= MemoryKind::graph;
}

// Wall time of an event's stamp. With the TSC, on the boot the journal was
// made on: the rate measured from the journal's reference to now, anchored
// now, as the shim's worker does (cache/events/event_clock.cpp). After a
// reboot the counter means nothing: the journal's creation time.
class WallClock {
public:
    explicit WallClock(const JournalHeader &header) : header_(header)
    {
        if (header.time_is_tsc && made_on_this_boot(header)) {
            const uint64_t raw = clock_ns(CLOCK_MONOTONIC_RAW);
            now_tsc_ = read_cycle_counter();
            now_ns_ = clock_ns(CLOCK_REALTIME);
            if (now_tsc_ > header.clock_tsc && raw > header.clock_raw_ns)
                ns_per_tick_ = static_cast<double>(raw - header.clock_raw_ns) /
                               static_cast<double>(now_tsc_ - header.clock_tsc);
        }
    }

    uint64_t realtime_ns(uint64_t queued_time) const
    {
        if (!(queued_time & queued_time_is_tsc))
            return queued_time;
        if (!ns_per_tick_)
            return header_.created_ns;
        const auto ticks = static_cast<int64_t>((queued_time & ~queued_time_is_tsc) - now_tsc_);
        return now_ns_ + static_cast<uint64_t>(
                             static_cast<int64_t>(static_cast<double>(ticks) * ns_per_tick_));
    }

private:
    const JournalHeader &header_;
    uint64_t now_tsc_ = 0, now_ns_ = 0;
    double ns_per_tick_ = 0;
};

} // namespace

bool made_on_this_boot(const JournalHeader &header)
{
    Result<std::string> read = read_small_file("/proc/sys/kernel/random/boot_id", 64);
    std::string &boot_id = *read;
    if (!read || boot_id.empty())
        return false;
    boot_id.resize(boot_id.find('\n') == std::string::npos ? boot_id.size() : boot_id.find('\n'));
    return strncmp(boot_id.c_str(), header.boot_id, sizeof header.boot_id) == 0;
}

Result<void> read_journal(int fd, JournalContents &out)
{
    auto refused = [](StatusCode code, int error, std::string why) {
        return Result<void>::failure(Status::error(code, error, "read_journal"), std::move(why));
    };
    JournalHeader &h = out.header;
    if (!read_exactly(fd, &h, sizeof h, 0) ||
        memcmp(h.magic, journal_magic, sizeof journal_magic) != 0)
        return refused(StatusCode::invalid, 0, "not a journal, or one never made whole");
    if (h.version != journal_version || h.cell_bytes != journal_cell_bytes)
        return refused(StatusCode::unsupported, 0, "a journal of another version of gdrhook");
    // Every size is checked against what the shim makes and against the
    // file's real size before anything is read or allocated: the header
    // is the file's to claim, and a sparse file claims any size.
    struct stat st;
    if (fstat(fd, &st) != 0)
        return refused(StatusCode::io_error, errno, strerror(errno));
    const auto file_bytes = static_cast<uint64_t>(st.st_size);
    if (h.capacity == 0 || h.capacity > max_journal_capacity ||
        h.cell_offset != journal_header_bytes || h.strings_bytes > max_journal_strings_bytes ||
        h.anchor_offset >= h.strings_bytes ||
        h.strings_offset < h.cell_offset + h.capacity * sizeof(Cell) ||
        h.strings_offset > file_bytes || h.strings_bytes > file_bytes - h.strings_offset)
        return refused(StatusCode::invalid, 0,
                       "the sizes in its header do not fit a journal of " +
                           std::to_string(file_bytes) + " bytes");
    h.log_name[sizeof h.log_name - 1] = '\0';
    h.host[sizeof h.host - 1] = '\0';

    std::vector<Cell> cells(h.capacity);
    std::string strings(h.strings_bytes, '\0');
    if (!read_exactly(fd, cells.data(), cells.size() * sizeof(Cell), h.cell_offset) ||
        !read_exactly(fd, strings.data(), strings.size(), h.strings_offset))
        return refused(StatusCode::invalid, 0, "a journal cut short");

    // A cell holds a recorded event not yet released when its sequence is
    // its position + 1 (event_queue.h); position = sequence - 1.
    const WallClock clock(h);
    for (uint64_t i = 0; i < h.capacity; ++i) {
        const Cell &cell = cells[i];
        if (cell.sequence == 0 || (cell.sequence - 1) % h.capacity != i)
            continue;
        const QueuedEvent &q = cell.item;
        if (q.kind == placeholder_kind) {
            ++out.placeholders;
            continue;
        }
        JournalEvent je;
        if (!known_enums(q) || !text_at(strings, h.anchor_offset, q.api, je.api) ||
            !text_at(strings, h.anchor_offset, q.msg, je.msg) ||
            !text_at(strings, h.anchor_offset, q.backend, je.backend))
            continue; // not an event this build of the shim wrote
        Event &e = je.event;
        e.seq = cell.sequence - 1;
        e.addr = q.addr;
        e.size = q.size;
        e.entry_id = q.entry_id;
        e.tid = q.tid;
        e.rc = q.rc;
        e.dev = q.dev;
        e.kind = q.kind;
        e.via = q.via;
        e.mem = q.mem;
        je.has_msg = q.msg != queued_null_text;
        je.has_backend = q.backend != queued_null_text;
        je.realtime_ns = clock.realtime_ns(q.time);
        out.events.push_back(std::move(je));
    }
    std::sort(
        out.events.begin(), out.events.end(),
        [](const JournalEvent &a, const JournalEvent &b) { return a.event.seq < b.event.seq; });
    // The strings are pointed at only now that the vector moves no more.
    for (JournalEvent &je : out.events) {
        je.event.api = je.api.c_str();
        je.event.msg = je.has_msg ? je.msg.c_str() : nullptr;
        je.event.backend = je.has_backend ? je.backend.c_str() : nullptr;
    }
    return {};
}

} // namespace gdrhook::cli
