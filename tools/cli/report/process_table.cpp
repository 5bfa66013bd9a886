// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "report/process_table.h"

namespace gdrhook::cli {

std::string describe(const ProcessIdentity &who)
{
    std::string text;
    if (who.has_rank)
        text = "rank " + std::to_string(who.rank) + ", ";
    if (!who.host.empty())
        text += "host " + who.host.shown() + ", ";
    return text + "pid " + std::to_string(who.key.pid);
}

std::string short_label(const ProcessIdentity &who)
{
    std::string text =
        who.has_rank ? "rank " + std::to_string(who.rank) : "pid " + std::to_string(who.key.pid);
    if (!who.host.empty())
        text += " (" + who.host.shown() + ")";
    return text;
}

void ProcessTable::note(const LogEvent &event, const SourceLocation &where)
{
    if (event.kind != EventKind::process)
        return;
    ++lines_;
    ProcessKey key = process_key(event, where);
    own_[key] = Known{event.process.host, event.process.has_rank, event.process.rank};
    first_of_file_.emplace(where.file, key);
}

ProcessIdentity ProcessTable::identity(const ProcessKey &key) const
{
    ProcessIdentity who;
    who.key = key;
    auto found = own_.find(key);
    if (found == own_.end()) {
        auto first = first_of_file_.find(key.file);
        if (first == first_of_file_.end())
            return who;
        found = own_.find(first->second);
    }
    who.host = UntrustedText(found->second.host);
    who.has_rank = found->second.has_rank;
    who.rank = found->second.rank;
    return who;
}

} // namespace gdrhook::cli
