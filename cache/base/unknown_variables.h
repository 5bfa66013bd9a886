// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A GDRHOOK_* variable that nothing in gdrhook reads is most likely a
// misspelling of one that is read: without a word the program would run
// with the default the user meant to change. One line per such variable,
// naming the closest known one (as UCX does for UCX_*). The shim says it
// once, at its start (cache/core/runtime.cpp); `gdrhook doctor` lists the
// same lines for its own environment and for a process it is shown.
#pragma once

#include "cache/base/config.h"

#include <string>
#include <string_view>

namespace gdrhook {

// The product's prefix; test harness knobs have one of their own
// (GDRHOOKTEST_), so that this prefix names settings only.
inline constexpr std::string_view variable_prefix = "GDRHOOK_";

// Whether `name` is a variable gdrhook reads: a row of the settings table
// (config_variables()) or one of other_product_variables.
bool is_known_variable(std::string_view name);

// The known variable nearest to `name` (edit distance, ignoring case,
// a swap of neighbours counted as one edit), or "" when even the nearest
// needs more than a third of its letters changed.
std::string closest_known_variable(std::string_view name);

// Adds one line to `diagnostics` when `name` has the product's prefix and
// is no known variable.
void check_variable_name(std::string_view name, Diagnostics &diagnostics);

// check_variable_name for each NAME=VALUE entry of `environment`, an
// array laid out as environ is (ending in nullptr).
void check_variable_names(const char *const *environment, Diagnostics &diagnostics);

} // namespace gdrhook
