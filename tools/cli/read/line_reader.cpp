// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/line_reader.h"

#include "cache/base/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gdrhook::cli {

LineReader::LineReader(size_t padding, size_t chunk)
    : padding_(padding), chunk_(chunk), alloc_size_(chunk + padding),
      buffer_(new char[chunk + padding])
{
    // The padding is never part of a line, but simdjson may read it.
    std::memset(buffer_.get(), 0, alloc_size_);
}

// A line that does not fit: a buffer that holds max_line and its newline.
void LineReader::grow()
{
    size_t chunk = max_line + 1;
    std::unique_ptr<char[]> bigger(new char[chunk + padding_]);
    std::memcpy(bigger.get(), buffer_.get(), end_);
    std::memset(bigger.get() + end_, 0, chunk + padding_ - end_);
    buffer_ = std::move(bigger);
    chunk_ = chunk;
    alloc_size_ = chunk + padding_;
}

namespace {

// A log is read as the layer reads: no link followed, no FIFO or device
// waited on, a regular file with one name (a hard link planted where
// fs.protected_hardlinks is 0 names somebody else's file), whoever owns it
// (the kernel says who may read it).
OpenedFile open_log(const std::string &path)
{
    return open_for_reading(AT_FDCWD, path.c_str(), Owner::anyone(), true);
}

// What the layer refused, as the static text a Status carries.
Status refusal(const std::string &path, const OpenedFile &opened)
{
    if (opened.system_error())
        return Status::error(StatusCode::io_error, opened.system_error(), "cannot open");
    struct stat st;
    if (fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        return Status::error(StatusCode::invalid, EISDIR, "cannot read");
    if (opened.why() == "is a symbolic link")
        return Status::error(StatusCode::invalid, 0, "will not read a symbolic link");
    if (opened.why() == "has other names (hard links)")
        return Status::error(StatusCode::invalid, 0, "will not read a file with other names");
    return Status::error(StatusCode::invalid, 0,
                         "will not read what is not a regular file (a FIFO, a device, a socket)");
}

} // namespace

bool LineReader::reopen()
{
    UniqueFd fd = std::move(open_log(path_)->fd);
    if (!fd.valid() || lseek(fd.get(), static_cast<off_t>(bytes_read_), SEEK_SET) < 0) {
        read_error_ = "error reading '" + path_ + "' again: " + std::strerror(errno);
        return false;
    }
    fd_ = std::move(fd);
    return true;
}

Status LineReader::open(const std::string &path)
{
    path_ = path;
    OpenedFile opened = open_log(path);
    if (!opened)
        return refusal(path, opened);
    fd_ = std::move(opened->fd);
    // One pass from start to end: let the kernel read ahead generously.
    posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    opened_ = true;
    if (close_between_reads_)
        fd_.reset();
    return Status::success();
}

std::string file_error(const std::string &path, const Status &status)
{
    std::string message = std::string(status.what) + " '" + path + "'";
    if (status.detail)
        message += std::string(": ") + std::strerror(status.detail);
    return message;
}

bool LineReader::fill()
{
    // Keep the unconsumed tail of the last line, then read after it.
    if (begin_ > 0) {
        std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (end_ == chunk_ && chunk_ <= max_line)
        grow(); // full, and no newline yet: next() skips lines over max_line
    if (!fd_.valid() && !reopen()) {
        eof_ = true;
        return false;
    }
    for (;;) {
        ssize_t n = ::read(fd_.get(), buffer_.get() + end_, chunk_ - end_);
        if (n > 0) {
            end_ += static_cast<size_t>(n);
            bytes_read_ += static_cast<uint64_t>(n);
            if (close_between_reads_)
                fd_.reset();
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            read_error_ = "error reading '" + path_ + "': " + std::strerror(errno);
        eof_ = true;
        fd_.reset();
        return false;
    }
}

bool LineReader::next(Line &line)
{
    if (!opened_)
        return false;
    for (;;) {
        char *start = buffer_.get() + begin_;
        size_t available = end_ - begin_;
        auto *newline = static_cast<char *>(std::memchr(start, '\n', available));
        if (newline || (eof_ && (available > 0 || skipping_))) {
            size_t size = newline ? static_cast<size_t>(newline - start) : available;
            begin_ += newline ? size + 1 : size;
            line = Line{};
            line.number = ++line_number_;
            line.unfinished = !newline;
            // The same limit whether or not the line fit in one read.
            if (skipping_ || size > max_line) {
                skipping_ = false;
                line.too_long = true;
                return true;
            }
            line.data = start;
            line.size = size;
            line.capacity = alloc_size_ - static_cast<size_t>(start - buffer_.get());
            return true;
        }
        if (eof_)
            return false;
        if (skipping_ || available >= max_line) {
            // Drop what we hold of an overlong line and look for its end.
            skipping_ = true;
            begin_ = end_ = 0;
        }
        fill();
    }
}

} // namespace gdrhook::cli
