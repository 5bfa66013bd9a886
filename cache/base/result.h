// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A value, or why there is none: gdrhook's one way of saying that a call
// failed, where the failure has words for a person to read (a file's
// name, a path, what the system answered). Built on Status, which the
// code acts on (its category, and the errno or CUresult in `detail`);
// `why` is what a message says after the thing's name, "is a symbolic
// link", "cannot be opened (No such file or directory)". Status alone
// stays the answer where nothing may allocate (a pin, the public C API);
// a Result allocates its words, so it is for set-up, files and the tool.
#pragma once

#include "cache/base/status.h"

#include <string>
#include <utility>

namespace gdrhook {

// What every Result says of how the call went.
class Outcome {
public:
    bool ok() const { return status_.ok(); }
    explicit operator bool() const { return ok(); }
    const Status &status() const { return status_; }
    const std::string &why() const { return why_; }
    // The errno of a failed system call, 0 for any other outcome.
    int system_error() const { return status_.code == StatusCode::io_error ? status_.detail : 0; }

protected:
    void fail(Status status, std::string why)
    {
        status_ = status;
        why_ = std::move(why);
    }

private:
    Status status_;
    std::string why_;
};

template <typename T> class [[nodiscard]] Result : public Outcome {
public:
    Result(T value) : value_(std::move(value)) {}
    static Result failure(Status status, std::string why, T partial = T{})
    {
        // `partial` keeps what was made before the failure (the bytes read
        // before a read failed), for callers that use what there is.
        Result result{std::move(partial)};
        result.fail(status, std::move(why));
        return result;
    }

    // The value; on a failure, T's empty value or what was kept.
    T &value() { return value_; }
    const T &value() const { return value_; }
    T &operator*() { return value_; }
    const T &operator*() const { return value_; }
    T *operator->() { return &value_; }
    const T *operator->() const { return &value_; }

private:
    T value_;
};

// Done, or why not.
template <> class [[nodiscard]] Result<void> : public Outcome {
public:
    Result() = default;
    static Result failure(Status status, std::string why)
    {
        Result result;
        result.fail(status, std::move(why));
        return result;
    }
};

// A failed system call: its errno, and the words for it.
inline Status system_failure(int error, const char *what)
{
    return Status::error(StatusCode::io_error, error, what);
}

} // namespace gdrhook
