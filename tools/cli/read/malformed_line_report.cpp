// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "read/malformed_line_report.h"

#include "terminal/terminal_text.h"

#include <cstdint>
#include <ostream>

namespace gdrhook::cli {

MalformedLineReport::MalformedLineReport(std::ostream &out, const std::vector<std::string> &paths)
    : out_(out), paths_(paths), per_file_(paths.size(), 0)
{}

void MalformedLineReport::malformed(uint32_t file, uint64_t line, const std::string &reason)
{
    ++total_;
    if (++per_file_[file] <= shown_per_file)
        out_ << UntrustedText(paths_[file]) << ':' << line << ": malformed line: " << reason
             << '\n';
}

void MalformedLineReport::unfinished_last_line(uint32_t file, uint64_t line)
{
    out_ << UntrustedText(paths_[file]) << ':' << line
         << ": the last line stops short (the process was killed while writing it?); skipped\n";
}

void MalformedLineReport::finish()
{
    for (size_t i = 0; i < per_file_.size(); ++i)
        if (per_file_[i] > shown_per_file)
            out_ << UntrustedText(paths_[i]) << ": " << per_file_[i] - shown_per_file
                 << " more malformed line(s) not shown\n";
}

} // namespace gdrhook::cli
