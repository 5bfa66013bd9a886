// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The folders the Slurm plugin keeps its jobs' logs in, and who may
// change them: LOGDIR (the site's: logdir=), LOGDIR/USER (made by the
// plugin, as root, for that user) and LOGDIR/USER/JOBID (made by the
// job's user). Every user of the node can reach LOGDIR, so every folder is
// opened from the one above it, never through a symbolic link at its
// name, and its owner and mode checked on what was opened (fstat): a
// folder another user made or aimed elsewhere first, to collect a job's
// logs or to plant its verdicts, is refused, never used.
#pragma once

#include "cache/base/safe_file.h"

#include <string>
#include <sys/types.h>

namespace gdrhook::slurm {

struct LogTreeRules {
    std::string root = "/var/tmp/gdrhook";
    // Who may own LOGDIR besides root (owner=): a site's own account.
    uid_t root_owner = 0;
    // The group that may read every job's logs (group=); none by default.
    bool has_readers = false;
    gid_t readers = 0;
};

// LOGDIR opened: a folder, no link at its name, owned by root or the
// site's owner, where no one else may write unless it is sticky (as /tmp:
// nobody then removes or renames what another made in it).
OpenedFile open_log_root(const LogTreeRules &rules);

// As root: LOGDIR/USER made for the user `uid` (its owner, and the
// readers' group where the site names one), or the one there checked to
// be that user's (or root's, left by an interrupted making) and given the
// site's mode. Why not names the folder.
Result<void> prepare_user_folder(const LogTreeRules &rules, const std::string &user, uid_t uid,
                                 gid_t gid);

// As the job's user: LOGDIR/USER/JOBID made, or the one there checked to
// be the user's, with the site's mode.
Result<void> make_job_folder(const LogTreeRules &rules, const std::string &user,
                             const std::string &job, uid_t uid);

// As srun's user: LOGDIR/USER/JOBID opened to read the step's verdicts,
// each folder checked to be the user's. Fails where LOGDIR or LOGDIR/USER
// is refused (the job ran without gdrhook); a folder only missing (srun's
// host may not be the job's nodes), or a job folder that is not the
// user's, answers no descriptor: there are no verdicts to read there.
Result<UniqueFd> open_job_folder(const LogTreeRules &rules, const std::string &user,
                                 const std::string &job, uid_t uid);

} // namespace gdrhook::slurm
