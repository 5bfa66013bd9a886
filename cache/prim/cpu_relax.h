// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The hint a spinning thread gives its core between two looks at a lock:
// the other hyperthread gets the pipeline, and the loop's exit costs no
// memory-order machine clear (x86-64 PAUSE, aarch64 YIELD).
#pragma once

namespace gdrhook {

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

} // namespace gdrhook
