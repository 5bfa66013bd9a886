// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Errors as values for the registration cache and its backends. A Status
// carries a category the cache acts on (no_space triggers eviction and a
// retry, managed is never pinned), the raw code that caused it (an errno or
// a CUresult) and a static message for the log. Nothing here allocates, so
// a Status can cross the C boundary of the shim as an errno.
#pragma once

#include <cerrno>

namespace gdrhook {

enum class StatusCode : unsigned char {
    ok,
    no_device,      // the backend's device or driver support is absent
    no_space,       // out of BAR space, handles or pinned-bytes budget
    unsupported,    // the backend cannot pin this memory (ABI, kind)
    managed,        // managed (unified) memory: never pinned
    invalid,        // bad arguments, or memory that is not (or no longer) allocated
    driver_error,   // the CUDA driver refused, detail holds the CUresult
    io_error,       // a system call failed, detail holds the errno
    not_found,      // nothing registered there
    no_descriptors, // the budget of descriptors pins may hold is spent
    refused,        // a file that is not one gdrhook may use (a link, another user's)
};

struct Status {
    StatusCode code = StatusCode::ok;
    int detail = 0;        // errno or CUresult, 0 when not applicable
    const char *what = ""; // static string, never freed

    bool ok() const { return code == StatusCode::ok; }

    static Status success() { return {}; }
    static Status error(StatusCode code, int detail, const char *what)
    {
        return Status{code, detail, what};
    }
};

// The negative errno the public C API returns for a Status.
inline int to_negative_errno(const Status &status)
{
    switch (status.code) {
    case StatusCode::ok: return 0;
    case StatusCode::no_device: return -ENODEV;
    case StatusCode::no_space: return -ENOSPC;
    case StatusCode::unsupported: return -EOPNOTSUPP;
    case StatusCode::managed: return -EOPNOTSUPP;
    case StatusCode::invalid: return -EINVAL;
    case StatusCode::driver_error: return -EIO;
    case StatusCode::io_error: return status.detail > 0 ? -status.detail : -EIO;
    case StatusCode::not_found: return -ENOENT;
    case StatusCode::no_descriptors: return -EMFILE;
    case StatusCode::refused: return -EPERM;
    }
    return -EIO;
}

} // namespace gdrhook
