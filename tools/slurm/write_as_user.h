// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Root's plugin writing into a job's folder, which the job's user may
// change while root writes (a link at the name would aim root's write
// anywhere): the write is made by a child that has taken the user's ids
// for good, so it can do nothing the user could not.
#pragma once

#include "cache/base/result.h"

#include <string>
#include <sys/types.h>

namespace gdrhook::slurm {

// Replaces `path` with `text` as user `uid` (primary group `gid`, no
// other; safe_file.h's replace_by_rename).
Result<void> replace_as_user(const std::string &path, const std::string &text, uid_t uid,
                             gid_t gid);

} // namespace gdrhook::slurm
