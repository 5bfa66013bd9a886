// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The first line of every log: a `process` event saying who wrote it (host,
// rank, pid, parent, command line, gdrhook's version and configuration, the
// driver and its devices, the clock anchor). docs/log-format.md has the
// schema; readers that do not know `process` skip it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gdrhook {

struct DeviceDescription {
    int ordinal = 0;
    std::string name, uuid, pci_bus_id;
};

struct ProcessDescription {
    std::string host;
    std::string rank, rank_from; // "" when unknown
    int ppid = 0;
    std::vector<std::string> cmdline;
    bool cmdline_truncated = false;
    std::string version;
    std::vector<std::pair<std::string, std::string>> config;
    int driver_version = -1; // -1: the driver was not asked
    std::vector<DeviceDescription> devices;
    // The clock anchor, read together.
    bool tsc = false;
    uint64_t realtime_ns = 0, monotonic_ns = 0, tsc_value = 0, tsc_hz = 0;
};

// The program's arguments from /proc/self/cmdline, up to 4 KiB in all.
void read_command_line(ProcessDescription &out);

// The line, with its trailing newline.
std::string format_process_line(const ProcessDescription &process, int pid, int tid);

} // namespace gdrhook
