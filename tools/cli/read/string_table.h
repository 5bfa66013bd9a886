// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gdrhook::cli {

// Interns the few distinct strings a log repeats millions of times (API
// names, memory kinds, backends) so an event can carry a string_view that
// outlives the parser's buffer. Bounded: past max_entries distinct strings
// every new one maps to overflow_name, so a hostile log cannot grow memory.
class StringTable {
public:
    static constexpr std::string_view overflow_name = "(other)";

    explicit StringTable(size_t max_entries = 4096) : max_entries_(max_entries) {}

    // A view of a stable copy of @p text (or of overflow_name when full).
    std::string_view intern(std::string_view text);

    size_t size() const { return index_.size(); }

private:
    size_t max_entries_;
    // unique_ptr keeps each string's characters in place when the vector
    // grows, so the views used as map keys stay valid.
    std::vector<std::unique_ptr<std::string>> storage_;
    std::unordered_map<std::string_view, std::string_view> index_;
};

} // namespace gdrhook::cli
