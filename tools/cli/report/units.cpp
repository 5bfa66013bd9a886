// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/units.h"

#include <cmath>
#include <cstdio>

namespace gdrhook::cli {

namespace {

std::string three_digits(double value, const char *unit)
{
    char text[64];
    if (value == std::floor(value) && value < 1000)
        std::snprintf(text, sizeof text, "%.0f %s", value, unit);
    else if (value < 10)
        std::snprintf(text, sizeof text, "%.2f %s", value, unit);
    else if (value < 100)
        std::snprintf(text, sizeof text, "%.1f %s", value, unit);
    else
        std::snprintf(text, sizeof text, "%.0f %s", value, unit);
    return text;
}

} // namespace

Unit byte_unit_for(double max_bytes)
{
    static const Unit units[] = {{1.0, "B"},
                                 {1024.0, "KiB"},
                                 {1024.0 * 1024, "MiB"},
                                 {1024.0 * 1024 * 1024, "GiB"},
                                 {1024.0 * 1024 * 1024 * 1024, "TiB"}};
    Unit chosen = units[0];
    for (const Unit &unit : units)
        if (max_bytes >= unit.divisor)
            chosen = unit;
    return chosen;
}

Unit time_unit_for(double max_ns)
{
    static const Unit units[] = {{1.0, "ns"}, {1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
    Unit chosen = units[0];
    for (const Unit &unit : units)
        if (max_ns >= unit.divisor)
            chosen = unit;
    return chosen;
}

std::string format_bytes(double bytes)
{
    Unit unit = byte_unit_for(bytes);
    return three_digits(bytes / unit.divisor, unit.name);
}

std::string format_duration_ns(double ns)
{
    Unit unit = time_unit_for(ns);
    return three_digits(ns / unit.divisor, unit.name);
}

} // namespace gdrhook::cli
