// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/journal.h"

#include "cache/base/clock.h"
#include "cache/base/safe_file.h"
#include "cache/events/event_clock.h"
#include "cache/events/journal_layout.h"
#include "cache/events/queued_event.h"
#include "cache/prim/cycle_counter.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace gdrhook {
namespace {

constexpr size_t page_bytes = 4096;

size_t round_to_page(size_t bytes)
{
    return (bytes + page_bytes - 1) / page_bytes * page_bytes;
}

// The loaded segment that holds queued_text_anchor: every static string a
// queued event names lies in it (queued_event.h).
struct Segment {
    const char *start = nullptr;
    size_t bytes = 0;
};

Segment anchor_segment()
{
    Segment found;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *segment = static_cast<Segment *>(data);
            const auto anchor = reinterpret_cast<uintptr_t>(queued_text_anchor);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type == PT_LOAD && anchor >= start && anchor < start + ph.p_memsz) {
                    segment->start = reinterpret_cast<const char *>(start);
                    segment->bytes = ph.p_memsz;
                    return 1;
                }
            }
            return 0;
        },
        &found);
    return found;
}

// Field 22 of /proc/self/stat: with the pid, names this process among all
// that ever had its pid.
uint64_t process_start_ticks()
{
    const Result<std::string> read = read_small_file("/proc/self/stat", 1024);
    if (!read)
        return 0;
    const std::string &text = *read;
    const char *p = strrchr(text.c_str(), ')'); // the command may hold spaces
    if (!p)
        return 0;
    // After ") ": field 3 (state) onwards; the start time is field 22.
    unsigned long long ticks = 0;
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &ticks) != 1)
        return 0;
    return ticks;
}

void copy_text(char *out, size_t capacity, const std::string &text)
{
    const size_t length = std::min(text.size(), capacity - 1);
    memcpy(out, text.data(), length);
    out[length] = '\0';
}

void read_boot_id(char (&out)[40])
{
    out[0] = '\0';
    if (const Result<std::string> text =
            read_small_file("/proc/sys/kernel/random/boot_id", sizeof out - 1))
        copy_text(out, sizeof out, text->substr(0, text->find('\n')));
}

// Every page written once, so the blocks exist now: a store into a hole of
// a full file system would be SIGBUS in the application's thread.
bool fill_with_zeros(int fd, size_t bytes)
{
    static const char zeros[page_bytes] = {};
    for (size_t at = 0; at < bytes;) {
        ssize_t written =
            pwrite(fd, zeros, std::min(page_bytes, bytes - at), static_cast<off_t>(at));
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        at += static_cast<size_t>(written);
    }
    return true;
}

bool write_all(int fd, const char *data, size_t bytes, size_t offset)
{
    while (bytes) {
        ssize_t written = pwrite(fd, data, bytes, static_cast<off_t>(offset));
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        data += written;
        offset += static_cast<size_t>(written);
        bytes -= static_cast<size_t>(written);
    }
    return true;
}

// The segment is copied as raw bytes, redzones between globals and all:
// through a buffer filled without AddressSanitizer's checks, which would
// take the copy for an overflow of the global it starts in.
__attribute__((no_sanitize("address"))) void copy_raw(char *out, const char *from, size_t bytes)
{
    for (size_t i = 0; i < bytes; ++i)
        out[i] = from[i];
}

bool write_segment(int fd, const Segment &segment, size_t offset)
{
    char buffer[page_bytes * 4];
    for (size_t at = 0; at < segment.bytes; at += sizeof buffer) {
        const size_t bytes = std::min(sizeof buffer, segment.bytes - at);
        copy_raw(buffer, segment.start + at, bytes);
        if (!write_all(fd, buffer, bytes, offset + at))
            return false;
    }
    return true;
}

} // namespace

Result<void> Journal::create(const std::string &log_path, size_t capacity, size_t cell_bytes,
                             int pid)
{
    capacity_ = capacity;
    cell_bytes_ = cell_bytes;
    return map_new_file(log_path, pid, nullptr);
}

Result<void> Journal::map_new_file(const std::string &log_path, int pid, void *at)
{
    const Segment strings = anchor_segment();
    if (!strings.start || strings.bytes > max_journal_strings_bytes)
        return Result<void>::failure(Status::error(StatusCode::unsupported, 0, "no strings"),
                                     "cannot find the shim's strings");
    const size_t cells_bytes = round_to_page(capacity_ * cell_bytes_);
    const size_t mapped = journal_header_bytes + cells_bytes;

    // The time in the name keeps a pid used again (after exec, or by a
    // later process) off a journal nobody has recovered yet.
    const std::string path =
        log_path + "." + std::to_string(pid) + "." + std::to_string(realtime_ns()) + journal_suffix;
    // Made without a name (O_TMPFILE) and linked at its name only once its
    // header is whole: a process killed while it sets the file up leaves
    // nothing, and every file at a journal's name carries the magic (the
    // tool removes nothing without it). Where the file system cannot, the
    // file is made at its name (O_EXCL), and one left by a process killed
    // in that window stays for the user to remove.
    const size_t slash_at = path.rfind('/');
    const std::string folder = slash_at == std::string::npos ? "."
                               : slash_at == 0               ? "/"
                                                             : path.substr(0, slash_at);
    const mode_t mode = private_file_mode(path);
    OpenedFile made = create_unnamed(folder.c_str(), mode);
    const bool named = !made;
    if (named)
        made = create_exclusive(AT_FDCWD, path.c_str(), mode);
    // Moved out of the program's way before it is locked: closing the
    // number it had would drop an fcntl lock taken through it.
    OwnedFd fd = OwnedFd::adopt(std::move(made->fd), true);
    if (!fd.valid())
        return Result<void>::failure(made.status(),
                                     "cannot create the journal '" + path + "': it " + made.why());
    // Held while the process lives; the tool takes it to know it is dead.
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    const int flags = at ? MAP_SHARED | MAP_FIXED : MAP_SHARED;
    void *memory = MAP_FAILED;
    if (fcntl(fd.get(), F_SETLK, &lock) == 0 && fill_with_zeros(fd.get(), mapped) &&
        write_segment(fd.get(), strings, mapped))
        memory = mmap(at, mapped, PROT_READ | PROT_WRITE, flags | MAP_POPULATE, fd.get(), 0);
    if (memory == MAP_FAILED) {
        const int error = errno;
        if (named)
            unlink(path.c_str());
        return Result<void>::failure(system_failure(error, "cannot set up the journal"),
                                     "cannot set up the journal '" + path +
                                         "': " + strerror(error));
    }

    auto *header = static_cast<JournalHeader *>(memory);
    header->version = journal_version;
    header->cell_bytes = static_cast<uint32_t>(cell_bytes_);
    header->capacity = capacity_;
    header->cell_offset = journal_header_bytes;
    header->strings_offset = mapped;
    header->strings_bytes = strings.bytes;
    header->anchor_offset = static_cast<uint64_t>(queued_text_anchor - strings.start);
    header->pid = pid;
    header->start_ticks = process_start_ticks();
    header->created_ns = realtime_ns();
    header->time_is_tsc = event_clock_counts_tsc();
    header->clock_tsc = read_cycle_counter();
    header->clock_realtime_ns = realtime_ns();
    timespec raw;
    clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
    header->clock_raw_ns = static_cast<uint64_t>(raw.tv_sec) * 1000000000ull + raw.tv_nsec;
    header->state.store(static_cast<uint32_t>(JournalState::recording), std::memory_order_relaxed);
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    copy_text(header->host, sizeof header->host, host);
    read_boot_id(header->boot_id);
    const size_t slash = log_path.rfind('/');
    copy_text(header->log_name, sizeof header->log_name,
              slash == std::string::npos ? log_path : log_path.substr(slash + 1));
    // Last: the magic says the header is whole. The reader comes after
    // this process has died, when every store it made is in the page
    // cache; only the compiler must keep this one last.
    asm volatile("" ::: "memory");
    memcpy(header->magic, journal_magic, sizeof journal_magic);
    if (!named && !name_unnamed(fd.get(), path.c_str())) {
        const int error = errno;
        munmap(memory, mapped);
        return Result<void>::failure(system_failure(error, "cannot name the journal"),
                                     "cannot name the journal '" + path + "': " + strerror(error));
    }

    fd_ = std::move(fd);
    header_ = header;
    mapped_bytes_ = mapped;
    path_ = path;
    return {};
}

void *Journal::cells() const
{
    return header_ ? reinterpret_cast<char *>(header_) + journal_header_bytes : nullptr;
}

void Journal::remove()
{
    if (!header_ || path_.empty())
        return;
    header_->state.store(static_cast<uint32_t>(JournalState::complete), std::memory_order_release);
    unlink(path_.c_str());
    path_.clear();
}

std::string Journal::keep_for_recovery(uint64_t lost_events)
{
    if (!header_ || path_.empty())
        return {};
    header_->lost_events = lost_events;
    std::string kept = path_;
    path_.clear(); // nothing more to remove
    return kept;
}

void Journal::move_to_child(const std::string &log_path, int pid)
{
    if (!header_)
        return;
    fd_.reset(); // the parent's file; the child holds no lock on it
    path_.clear();
    if (!log_path.empty() && map_new_file(log_path, pid, header_).ok())
        return;
    mmap(header_, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
         -1, 0);
}

} // namespace gdrhook
