// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Text a process chose (its name in /proc/PID/comm, a path it mapped),
// made safe to print on the terminal of whoever runs gdrhook: a process
// can set its name to any bytes (prctl PR_SET_NAME), and escapes or a
// carriage return would reach root's terminal as commands or rewrite
// what root reads. Every command prints such text through this.
#pragma once

#include <string>
#include <string_view>

namespace gdrhook::cli {

// `text` with every byte that is not printable ASCII written as \xNN,
// and a backslash as \\ (so the escaped text says which bytes it held).
std::string terminal_text(std::string_view text);

} // namespace gdrhook::cli
