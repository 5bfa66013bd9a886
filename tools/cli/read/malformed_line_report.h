// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "read/log_reader.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gdrhook::cli {

// Reports malformed lines as "FILE:LINE: malformed line: REASON" on a
// stream, the first few per file, and counts them all.
class MalformedLineReport : public MalformedLineSink {
public:
    static constexpr uint64_t shown_per_file = 20;

    MalformedLineReport(std::ostream &out, const std::vector<std::string> &paths);
    void malformed(uint32_t file, uint64_t line, const std::string &reason) override;
    void unfinished_last_line(uint32_t file, uint64_t line) override;

    // Prints how many were not shown, per file.
    void finish();
    uint64_t total() const { return total_; }

private:
    std::ostream &out_;
    const std::vector<std::string> &paths_;
    std::vector<uint64_t> per_file_;
    uint64_t total_ = 0;
};

} // namespace gdrhook::cli
