// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_integrated.cpp - the shim on an integrated GPU, end to end: the
// packed integrated_host_pins program under LD_PRELOAD=libgdrhook.so with
// the fake driver's integrated mode (FAKECUDA_INTEGRATED=1),
// GDRHOOK_BACKEND=auto and GDRHOOK_PIN=alloc. `auto` must choose the
// module's pin_user_pages backend (the GPU is integrated and the module
// pins host pages); the program checks the pins through the module's
// counters (tests/vm/integrated_host_pins.cpp says what). Afterwards
// nothing is left pinned. Then again without CAP_IPC_LOCK and with a
// 64 KiB RLIMIT_MEMLOCK (issue 39, item 11): the module refuses, the
// program runs as without the shim, and the shim's log names the limit.
#include "common.hpp"

#include <fstream>
#include <sstream>

namespace vmtest {

int test_integrated()
{
    const pid_t pid =
        spawn("integrated_host_pins",
              {std::string("LD_PRELOAD=") + kPackedDir + "/libgdrhook.so", "FAKECUDA_INTEGRATED=1",
               "GDRHOOK_BACKEND=auto", "GDRHOOK_PIN=alloc", "GDRHOOK_LOG_LEVEL=info"},
              -1, -1);
    CHECK(exited_ok(pid));
    check_no_leaks("after integrated_host_pins");

    const std::string log = "/tmp/integrated_memlock.jsonl";
    ::unlink(log.c_str());
    const pid_t limited =
        spawn("integrated_host_pins",
              {std::string("LD_PRELOAD=") + kPackedDir + "/libgdrhook.so", "FAKECUDA_INTEGRATED=1",
               "GDRHOOK_BACKEND=auto", "GDRHOOK_PIN=alloc", "GDRHOOK_LOG_LEVEL=info",
               "GDRHOOK_EVENTS=" + log, "INTEGRATED_MEMLOCK_64K=1"},
              -1, -1);
    CHECK(exited_ok(limited));
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    // The refusal is in the log, in words a user can act on.
    if (text.str().find("RLIMIT_MEMLOCK") == std::string::npos)
        fail(__FILE__, __LINE__, "no line of " + log + " names RLIMIT_MEMLOCK:\n" + text.str());
    check_no_leaks("after integrated_host_pins past its memlock limit");
    return 0;
}

} // namespace vmtest
