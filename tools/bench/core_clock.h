// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The core the calling thread runs on, as it is now: its clock, and how
// much of its width the thread gets. A hit of a few nanoseconds is a
// handful of cycles; the same code gave 5.7 cycles in one process and
// 10 in the next on the GPU machine's VM, at the same 2.5 to 2.9 GHz.
// Each lookup figure carries both, so that a slower round can be told
// from a slower hit, and a slower core from a shared one.
//
// Method, the best of five passes (a time slice the hypervisor takes
// lowers a pass, never raises it), each timed with two steady_clock reads:
//  - ghz: a chain of 2^20 dependent register adds, one cycle each on every
//    x86-64 and AArch64 core (the loop's own counter runs beside it);
//  - adds_per_cycle: the same number of adds in eight independent chains,
//    per cycle of that clock. The core's integer units bound it (4 to 6 on
//    today's cores); a hyperthread the guest is not told of, busy on the
//    same core, takes about half. The dependent chain barely notices.
#pragma once

namespace bench {

struct CoreClock {
    double ghz = 0;            // cycles per nanosecond
    double adds_per_cycle = 0; // independent adds retired per cycle
};

// Zeros where the chains are not written for this architecture.
CoreClock core_clock();

} // namespace bench
