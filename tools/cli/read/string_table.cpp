// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/string_table.h"

namespace gdrhook::cli {

std::string_view StringTable::intern(std::string_view text)
{
    auto found = index_.find(text);
    if (found != index_.end())
        return found->second;
    if (index_.size() >= max_entries_)
        return overflow_name;
    storage_.push_back(std::make_unique<std::string>(text));
    std::string_view stable = *storage_.back();
    index_.emplace(stable, stable);
    return stable;
}

} // namespace gdrhook::cli
