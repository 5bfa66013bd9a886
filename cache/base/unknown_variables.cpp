// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/unknown_variables.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace gdrhook {
namespace {

char upper(char c)
{
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
}

// Edits (insert, delete, replace, swap two neighbours) that turn a into b,
// ignoring case: the optimal string alignment distance.
size_t edit_distance(std::string_view a, std::string_view b)
{
    const size_t columns = b.size() + 1;
    std::vector<size_t> d((a.size() + 1) * columns);
    auto at = [&](size_t i, size_t j) -> size_t & { return d[i * columns + j]; };
    for (size_t i = 0; i <= a.size(); ++i)
        at(i, 0) = i;
    for (size_t j = 0; j <= b.size(); ++j)
        at(0, j) = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t change = upper(a[i - 1]) == upper(b[j - 1]) ? 0 : 1;
            at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + change});
            if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) &&
                upper(a[i - 2]) == upper(b[j - 1]))
                at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
        }
    }
    return at(a.size(), b.size());
}

template <typename Visit> void for_each_known_variable(Visit visit)
{
    for (const ConfigVariable &variable : config_variables())
        visit(std::string_view(variable.name));
    for (const char *name : other_product_variables)
        visit(std::string_view(name));
}

} // namespace

bool is_known_variable(std::string_view name)
{
    bool known = false;
    for_each_known_variable([&](std::string_view candidate) { known |= candidate == name; });
    return known;
}

std::string closest_known_variable(std::string_view name)
{
    // Compared without the prefix every candidate shares, so that a third
    // of the letters means a third of what tells the variables apart.
    const std::string_view asked = name.substr(std::min(name.size(), variable_prefix.size()));
    std::string_view best;
    size_t best_distance = 0;
    for_each_known_variable([&](std::string_view candidate) {
        const size_t distance = edit_distance(asked, candidate.substr(variable_prefix.size()));
        const size_t limit = std::max<size_t>(1, (candidate.size() - variable_prefix.size()) / 3);
        if (distance <= limit && (best.empty() || distance < best_distance)) {
            best = candidate;
            best_distance = distance;
        }
    });
    return std::string(best);
}

void check_variable_name(std::string_view name, Diagnostics &diagnostics)
{
    if (name.substr(0, variable_prefix.size()) != variable_prefix || is_known_variable(name))
        return;
    const std::string closest = closest_known_variable(name);
    diagnostics.push_back(
        "gdrhook: " + std::string(name) + " is not a gdrhook variable and is ignored (" +
        (closest.empty() ? std::string("no close match") : "did you mean " + closest + "?") +
        "; `gdrhook doctor --settings` lists them)");
}

void check_variable_names(const char *const *environment, Diagnostics &diagnostics)
{
    for (const char *const *entry = environment; entry && *entry; ++entry) {
        const char *equals = std::strchr(*entry, '=');
        check_variable_name(equals ? std::string_view(*entry, equals - *entry)
                                   : std::string_view(*entry),
                            diagnostics);
    }
}

} // namespace gdrhook
