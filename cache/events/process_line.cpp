// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/events/process_line.h"

#include "cache/base/safe_file.h"
#include "cache/events/event_line.h"
#include "cache/events/json_text.h"
#include "cache/prim/cycle_counter.h"

#include <fcntl.h>
#include <unistd.h>

namespace gdrhook {
namespace {

constexpr size_t cmdline_limit = 4096;

// `"key":`, the first of an object's, then each further one.
void first_key(std::string &out, const char *key)
{
    out += '"';
    out += key;
    out += "\":";
}

void append_key(std::string &out, const char *key)
{
    out += ',';
    first_key(out, key);
}

} // namespace

void read_command_line(ProcessDescription &out)
{
    Result<std::string> read = read_small_file("/proc/self/cmdline", cmdline_limit + 1);
    if (!read)
        return;
    std::string &text = *read;
    const size_t length = text.size();
    out.cmdline_truncated = length > cmdline_limit;
    text.resize(std::min(length, cmdline_limit));
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\0') {
            out.cmdline.push_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    // An argument cut at the limit is dropped whole.
    if (start < text.size())
        out.cmdline_truncated = true;
}

std::string format_process_line(const ProcessDescription &p, int pid, int tid)
{
    using namespace log_key;
    std::string out =
        format_whole_line_start(EventKind::process, "gdrhook", p.realtime_ns, 0, pid, tid);
    append_key(out, host);
    append_json_string(out, p.host);
    if (!p.rank.empty()) {
        append_key(out, rank);
        out += p.rank;
        append_key(out, rank_from);
        append_json_string(out, p.rank_from);
    }
    append_key(out, ppid);
    out += std::to_string(p.ppid);
    append_key(out, cmdline);
    out += '[';
    for (size_t i = 0; i < p.cmdline.size(); ++i) {
        if (i)
            out += ',';
        append_json_string(out, p.cmdline[i]);
    }
    out += ']';
    if (p.cmdline_truncated) {
        append_key(out, cmdline_truncated);
        out += "true";
    }
    append_key(out, version);
    append_json_string(out, p.version);
    append_key(out, config);
    out += '{';
    for (size_t i = 0; i < p.config.size(); ++i) {
        if (i)
            out += ',';
        append_json_string(out, p.config[i].first);
        out += ':';
        append_json_string(out, p.config[i].second);
    }
    out += '}';
    if (p.driver_version >= 0) {
        append_key(out, driver_version);
        out += std::to_string(p.driver_version);
        append_key(out, devices);
        out += '[';
        for (size_t i = 0; i < p.devices.size(); ++i) {
            const DeviceDescription &d = p.devices[i];
            out += i ? ",{" : "{";
            first_key(out, log_object_key::ordinal);
            out += std::to_string(d.ordinal);
            append_key(out, log_object_key::name);
            append_json_string(out, d.name);
            append_key(out, log_object_key::uuid);
            append_json_string(out, d.uuid);
            append_key(out, log_object_key::pci_bus_id);
            append_json_string(out, d.pci_bus_id);
            out += '}';
        }
        out += ']';
    }
    append_key(out, clock);
    // The counter named as it is: "tsc" on x86-64, "cntvct" on aarch64,
    // its reading and rate under the same name.
    const std::string counter = p.tsc ? cycle_counter_name : "realtime";
    out += '{';
    first_key(out, log_object_key::source);
    append_json_string(out, counter);
    append_key(out, log_object_key::realtime_ns);
    out += std::to_string(p.realtime_ns);
    append_key(out, log_object_key::monotonic_ns);
    out += std::to_string(p.monotonic_ns);
    if (p.tsc) {
        append_key(out, counter.c_str());
        out += std::to_string(p.tsc_value);
        append_key(out, (counter + "_hz").c_str());
        out += std::to_string(p.tsc_hz);
    }
    out += "}}\n";
    return out;
}

} // namespace gdrhook
