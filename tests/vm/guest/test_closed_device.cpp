// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_closed_device.cpp - the shim's /dev/gdrhook closed by the program,
// whose next file then gets the same number: the packed closed_device_fd
// program under LD_PRELOAD=libgdrhook.so with GDRHOOK_BACKEND=kmod and
// GDRHOOK_PIN=alloc frees and allocates after that, and its own file must
// be untouched (tests/vm/closed_device_fd.cpp says how it checks).
#include "common.hpp"

namespace vmtest {

int test_closed_device()
{
    const pid_t pid = spawn("closed_device_fd",
                            {std::string("LD_PRELOAD=") + kPackedDir + "/libgdrhook.so",
                             "GDRHOOK_BACKEND=kmod", "GDRHOOK_PIN=alloc", "GDRHOOK_LOG_LEVEL=info"},
                            -1, -1);
    CHECK(exited_ok(pid));
    return 0;
}

} // namespace vmtest
