// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <cstdint>
#include <string>

namespace gdrhook::cli {

// "0 B", "512 B", "1.5 KiB", "64 MiB", "1.25 GiB": binary units, at most
// three significant digits, as people read memory sizes.
std::string format_bytes(double bytes);

// "830 ns", "12.4 us", "3.1 ms", "2.50 s".
std::string format_duration_ns(double ns);

// The binary unit that suits @p max_bytes on an axis: its divisor and name.
struct Unit {
    double divisor;
    const char *name;
};
Unit byte_unit_for(double max_bytes);
Unit time_unit_for(double max_ns);

} // namespace gdrhook::cli
