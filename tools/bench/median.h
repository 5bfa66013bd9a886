// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The median of a benchmark's repeated figures (runs, rounds).
#pragma once

#include <algorithm>
#include <vector>

namespace bench {

// The middle value; for an even count, the mean of the two middle ones.
// values must not be empty.
inline double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace bench
