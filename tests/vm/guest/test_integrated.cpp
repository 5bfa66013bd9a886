// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_integrated.cpp - the shim on an integrated GPU, end to end: the
// packed integrated_host_pins program under LD_PRELOAD=libgdrhook.so with
// the fake driver's integrated mode (FAKECUDA_INTEGRATED=1),
// GDRHOOK_BACKEND=auto and GDRHOOK_PIN=alloc. `auto` must choose the
// module's pin_user_pages backend (the GPU is integrated and the module
// pins host pages); the program checks the pins through the module's
// counters (tests/vm/integrated_host_pins.cpp says what). Afterwards
// nothing is left pinned.
#include "common.hpp"

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
    return 0;
}

} // namespace vmtest
