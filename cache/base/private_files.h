// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Descriptors out of the program's reach. A program may close every
// descriptor at any moment and give the numbers to files of its own
// (closefrom, dup3): a descriptor of gdrhook's in the program's table can
// be checked before each use (owned_fd.h), but the check and the use are
// two calls, and a write between them lands in the program's file.
//
// One thread of gdrhook's unshares its descriptor table
// (unshare(CLONE_FILES)) and closes its copies of the program's
// descriptors: what it opens afterwards is in no table the program's calls
// reach, and costs the program no number. run_with_private_files() hands
// it a call and waits for it. The thread takes no signal (a program's
// handler run there would find none of its descriptors). Where it cannot
// be made (threads or unshare refused, as a sandbox may), the call runs on
// the caller, in the program's table, as before: checked, not held.
//
// A forked child has no such thread (fork copies the calling thread and
// its table): after_fork_in_child() forgets the parent's, and the next call
// starts the child's own. Descriptors opened there are the parent's.
#pragma once

#include <functional>

namespace gdrhook {

// Runs `call` on the private thread, or on the caller where there is
// none (on_private_files_thread() tells which, inside it). One call at a
// time; a call made from inside another runs there directly.
void run_with_private_files(const std::function<void()> &call);

// Whether the calling thread is the private one (inside such a call).
bool on_private_files_thread();

// In a forked child: the parent's thread does not exist here.
void private_files_after_fork_in_child();

} // namespace gdrhook
