// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "recover/log_tail.h"

#include "read/flat_line.h"
#include "read/log_event.h"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrhook::cli {
namespace {

constexpr size_t chunk_bytes = 64 * 1024;

uint64_t number(std::string_view text)
{
    return strtoull(std::string(text).c_str(), nullptr, 10);
}

// The lines whose seq is the event's own place in the process's queue:
// what its threads recorded. The worker's own lines (unpin, revoke,
// sample, the pins a forked child restates) carry the seq of the last
// event it took, and the process line 0 (docs/log-format.md).
bool seq_is_position(EventKind ev, std::string_view line)
{
    if (ev == EventKind::pin)
        return value_of(line, log_key::reason) != "inherited";
    return ev == EventKind::alloc || ev == EventKind::free || ev == EventKind::ctx_destroy ||
           ev == EventKind::error || ev == EventKind::skip;
}

bool read_at(int fd, char *out, size_t bytes, off_t offset)
{
    while (bytes) {
        ssize_t got = pread(fd, out, bytes, offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        out += got;
        offset += got;
        bytes -= static_cast<size_t>(got);
    }
    return true;
}

} // namespace

ProcessTail scan_process_tail(int fd, int pid, uint64_t since_ns)
{
    ProcessTail tail;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return tail;
    const std::string pid_text = std::to_string(pid);
    off_t end = st.st_size;
    std::string carry; // the start of a line that began in the previous chunk
    while (end > 0) {
        const off_t start =
            end > static_cast<off_t>(chunk_bytes) ? end - static_cast<off_t>(chunk_bytes) : 0;
        std::string chunk(static_cast<size_t>(end - start), '\0');
        if (!read_at(fd, chunk.data(), chunk.size(), start))
            return tail;
        chunk += carry;
        end = start;
        // Whole lines from the last back; the first may go on in the chunk before.
        size_t line_end = chunk.size();
        for (;;) {
            const size_t newline = line_end ? chunk.rfind('\n', line_end - 1) : std::string::npos;
            if (newline == std::string::npos && start > 0) {
                carry = chunk.substr(0, line_end);
                break;
            }
            const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
            std::string_view line(chunk.data() + line_start, line_end - line_start);
            if (!line.empty() && value_of(line, log_key::pid) == pid_text) {
                const uint64_t ts = number(value_of(line, log_key::ts_ns));
                if (ts < since_ns)
                    return tail; // before this process: done
                const EventKind ev = event_kind_from(value_of(line, log_key::ev));
                if (!tail.last_ts_ns) {
                    tail.last_ts_ns = ts;
                    tail.last_seq = number(value_of(line, log_key::seq));
                    tail.died = ev == EventKind::died;
                    if (tail.died)
                        return tail;
                }
                if (ev == EventKind::process)
                    return tail;
                if (seq_is_position(ev, line)) {
                    tail.wrote_positioned = true;
                    tail.last_position = number(value_of(line, log_key::seq));
                    return tail;
                }
            }
            if (newline == std::string::npos)
                return tail;
            line_end = newline;
        }
    }
    return tail;
}

bool cut_torn_line_of(int fd, int pid)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0)
        return false;
    const off_t size = st.st_size;
    const off_t start =
        size > static_cast<off_t>(chunk_bytes) ? size - static_cast<off_t>(chunk_bytes) : 0;
    std::string chunk(static_cast<size_t>(size - start), '\0');
    if (!read_at(fd, chunk.data(), chunk.size(), start) || chunk.back() == '\n')
        return false;
    const size_t newline = chunk.rfind('\n');
    if (newline == std::string::npos && start > 0)
        return false; // a "line" longer than any the shim writes: not ours
    const size_t torn = newline == std::string::npos ? 0 : newline + 1;
    // A line starts {"ts_ns":N,"seq":N,"pid":N,...: a fragment that names
    // another process is that process's to recover; one too short to name
    // any is cut (only a writer that died stops inside a line). A fragment
    // that does not start as a gdrhook line is nobody's torn line: left.
    const std::string_view fragment(chunk.data() + torn, chunk.size() - torn);
    if (!starts_as_log_line(fragment))
        return false;
    const std::string_view owner = value_of(fragment, log_key::pid);
    const bool whole_owner =
        fragment.find("\"" + std::string(log_key::pid) + "\":" + std::string(owner) + ",") !=
        std::string_view::npos;
    if (whole_owner && owner != std::to_string(pid))
        return false;
    return ftruncate(fd, start + static_cast<off_t>(torn)) == 0;
}

} // namespace gdrhook::cli
