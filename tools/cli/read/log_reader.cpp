// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// JSON parsing of the event log, with simdjson's DOM API.
//
// Why simdjson and not nlohmann-json: a busy program writes tens of
// millions of lines, and `log summary` / `log check` are meant to run on
// them in CI. On the same 1M-line log (tools/bench), parsing each line
// with nlohmann::json::parse ran at about 30 MB/s; simdjson, as used here,
// at about 360 MB/s. simdjson also parses each line in place (the line
// reader leaves the padding it needs), reuses one parser's buffers, and
// reports errors as codes, which fits "errors are values": a bad line
// becomes a message with its file and line number and reading goes on.
//
// Why the DOM API and not On Demand: On Demand is compiled inline for the
// build's target, which for a distribution build (no -march) is simdjson's
// scalar fallback; the DOM parser lives in libsimdjson and picks the best
// SIMD kernel for the CPU at run time. nlohmann-json is still used where
// the tool writes JSON (`log summary --json`): there, convenience wins.

#include "read/log_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

namespace gdrhook::cli {

const size_t LineParser::parse_padding = simdjson::SIMDJSON_PADDING;

struct LineParser::Impl {
    explicit Impl(StringTable &table) : strings(table) {}
    StringTable &strings;
    simdjson::dom::parser parser; // reused: it keeps its buffers between lines
};

LineParser::LineParser(StringTable &strings) : impl_(std::make_unique<Impl>(strings)) {}
LineParser::~LineParser() = default;

namespace {

// Bits of the keys every line must carry.
enum Required : unsigned {
    k_ts = 1u << 0,
    k_pid = 1u << 1,
    k_tid = 1u << 2,
    k_ev = 1u << 3,
    k_api = 1u << 4,
    k_addr = 1u << 5,
    k_size = 1u << 6,
    k_dev = 1u << 7,
    k_rc = 1u << 8,
};
constexpr unsigned all_required = (1u << 9) - 1;
constexpr const char *required_names[] = {log_key::ts_ns, log_key::pid, log_key::tid,
                                          log_key::ev,    log_key::api, log_key::addr,
                                          log_key::size,  log_key::dev, log_key::rc};

std::string type_error(std::string_view key, const char *expected, simdjson::error_code error)
{
    std::string reason = "key \"" + std::string(key) + "\": expected " + expected;
    // INCORRECT_TYPE is what the words above already say; other codes
    // (NUMBER_OUT_OF_RANGE, TAPE_ERROR, ...) add information.
    if (error != simdjson::INCORRECT_TYPE)
        reason += std::string(" (") + simdjson::error_message(error) + ")";
    return reason;
}

bool parse_hex_address(std::string_view text, uint64_t &out)
{
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        text.remove_prefix(2);
    if (text.empty())
        return false;
    auto result = std::from_chars(text.data(), text.data() + text.size(), out, 16);
    return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

// The keys of a `process` line the tools use. Read only on such lines (a
// few per log), so they cost the other lines nothing; a key of the wrong
// type makes the line malformed, as for every other key.
std::string parse_process(simdjson::dom::object object, ProcessInfo &info)
{
    for (simdjson::dom::key_value_pair field : object) {
        std::string_view key = field.key;
        simdjson::dom::element value = field.value;
        std::string_view text;
        simdjson::error_code error = simdjson::SUCCESS;
        if (key == log_key::host) {
            if ((error = value.get_string().get(text)))
                return type_error(key, "a string", error);
            info.host.assign(text);
        } else if (key == log_key::rank) {
            if ((error = value.get_int64().get(info.rank)))
                return type_error(key, "an integer", error);
            info.has_rank = true;
        } else if (key == log_key::ppid) {
            if ((error = value.get_int64().get(info.ppid)))
                return type_error(key, "an integer", error);
        } else if (key == log_key::driver_version) {
            if ((error = value.get_int64().get(info.driver_version)))
                return type_error(key, "an integer", error);
        } else if (key == log_key::version) {
            if ((error = value.get_string().get(text)))
                return type_error(key, "a string", error);
            info.version.assign(text);
        } else if (key == log_key::cmdline) {
            simdjson::dom::array args;
            if ((error = value.get_array().get(args)))
                return type_error(key, "an array of strings", error);
            for (simdjson::dom::element arg : args) {
                if ((error = arg.get_string().get(text)))
                    return type_error(key, "an array of strings", error);
                if (!info.cmdline.empty())
                    info.cmdline += ' ';
                info.cmdline.append(text);
            }
        } else if (key == log_key::config) {
            simdjson::dom::object config;
            if ((error = value.get_object().get(config)))
                return type_error(key, "an object of strings", error);
            std::vector<std::pair<std::string_view, std::string_view>> settings;
            for (simdjson::dom::key_value_pair setting : config) {
                if ((error = setting.value.get_string().get(text)))
                    return type_error(key, "an object of strings", error);
                settings.emplace_back(setting.key, text);
            }
            std::sort(settings.begin(), settings.end());
            for (const auto &[name, setting] : settings) {
                if (!info.config.empty())
                    info.config += ' ';
                info.config.append(name).append("=").append(setting);
            }
        }
    }
    return {};
}

} // namespace

std::string LineParser::parse(std::string_view line, LogEvent &event)
{
    std::string padded(line);
    padded.resize(line.size() + parse_padding, '\0');
    return parse(padded.data(), line.size(), padded.size(), event);
}

std::string LineParser::parse(const char *data, size_t size, size_t capacity, LogEvent &event)
{
    (void)capacity; // the caller guarantees size + parse_padding readable bytes
    event = LogEvent{};
    simdjson::dom::element doc;
    // The whole line is validated here (so trailing text or a truncated
    // object is an error); realloc_if_needed=false: the line is read in
    // place, relying on the padding the line reader leaves after it.
    if (auto error =
            impl_->parser.parse(reinterpret_cast<const uint8_t *>(data), size, false).get(doc))
        return std::string("not JSON (") + simdjson::error_message(error) + ")";
    simdjson::dom::object object;
    if (doc.get_object().get(object))
        return "not a JSON object";

    unsigned seen = 0;
    for (simdjson::dom::key_value_pair field : object) {
        std::string_view key = field.key;
        simdjson::dom::element value = field.value;

        auto get_int = [&](int64_t &out, unsigned bit) -> std::string {
            if (auto error = value.get_int64().get(out))
                return type_error(key, "an integer", error);
            seen |= bit;
            return {};
        };
        auto get_uint = [&](uint64_t &out, unsigned bit) -> std::string {
            if (auto error = value.get_uint64().get(out))
                return type_error(key, "a non-negative integer", error);
            seen |= bit;
            return {};
        };
        auto get_text = [&](std::string_view &out, unsigned bit) -> std::string {
            if (auto error = value.get_string().get(out))
                return type_error(key, "a string", error);
            seen |= bit;
            return {};
        };
        std::string problem;
        std::string_view text;
        if (key == log_key::ts_ns) {
            problem = get_int(event.ts_ns, k_ts);
        } else if (key == log_key::pid) {
            problem = get_int(event.pid, k_pid);
        } else if (key == log_key::tid) {
            problem = get_int(event.tid, k_tid);
        } else if (key == log_key::ev) {
            if ((problem = get_text(text, k_ev)).empty()) {
                event.kind = event_kind_from(text);
                event.ev = impl_->strings.intern(text);
            }
        } else if (key == log_key::api) {
            if ((problem = get_text(text, k_api)).empty())
                event.api = impl_->strings.intern(text);
        } else if (key == log_key::addr) {
            if ((problem = get_text(text, k_addr)).empty() && !parse_hex_address(text, event.addr))
                problem = "key \"" + std::string(key) +
                          "\": expected a hex address like \"0x7f00\", got \"" +
                          std::string(text.substr(0, 40)) + "\"";
        } else if (key == log_key::size) {
            problem = get_uint(event.size, k_size);
        } else if (key == log_key::dev) {
            problem = get_int(event.dev, k_dev);
        } else if (key == log_key::rc) {
            problem = get_int(event.rc, k_rc);
        } else if (key == log_key::seq) {
            problem = get_int(event.seq, 0);
            event.has_seq = problem.empty();
        } else if (key == log_key::handle) {
            problem = get_uint(event.entry_id, 0);
            event.has_entry_id = problem.empty();
        } else if (key == log_key::lat_ns) {
            problem = get_int(event.lat_ns, 0);
            event.has_lat = problem.empty();
        } else if (key == log_key::lost) {
            problem = get_uint(event.lost, 0);
        } else if (key == log_key::max_bytes) {
            problem = get_uint(event.max_bytes, 0);
        } else if (key == log_key::not_written) {
            problem = get_uint(event.not_written, 0);
        } else if (key == log_key::backend) {
            if ((problem = get_text(text, 0)).empty())
                event.backend = impl_->strings.intern(text);
        } else if (key == log_key::via) {
            if ((problem = get_text(text, 0)).empty())
                event.via = impl_->strings.intern(text);
        } else if (key == log_key::kind) {
            if ((problem = get_text(text, 0)).empty())
                event.mem_kind = impl_->strings.intern(text);
        } else if (key == log_key::reason) {
            if ((problem = get_text(text, 0)).empty())
                event.reason = impl_->strings.intern(text);
        } else if (key == log_key::rss_bytes) {
            problem = get_uint(event.rss_bytes, 0);
            event.has_rss = problem.empty();
        } else if (key == log_key::fds) {
            problem = get_uint(event.fds, 0);
            event.has_fds = problem.empty();
        } else if (key == log_key::pinned_bytes) {
            problem = get_uint(event.pinned_bytes, 0);
        } else if (key == log_key::pins) {
            problem = get_uint(event.pins, 0);
        } else if (key == log_key::answered) {
            problem = get_uint(event.answered, 0);
        } else if (key == log_key::forwarded) {
            problem = get_uint(event.forwarded, 0);
        } else if (key == log_key::msg) {
            if ((problem = get_text(text, 0)).empty())
                event.msg.assign(text);
        }
        // Unknown keys are ignored: the schema only ever adds keys.
        if (!problem.empty())
            return problem;
    }

    if (seen != all_required) {
        for (unsigned i = 0; i < 9; ++i)
            if (!(seen & (1u << i)))
                return std::string("missing required key \"") + required_names[i] + "\"";
    }
    if (event.kind == EventKind::process)
        return parse_process(object, event.process);
    return {};
}

LogFileReader::LogFileReader(uint32_t file_index, StringTable &strings, MalformedLineSink &sink)
    : file_index_(file_index), sink_(sink), own_parser_(std::make_unique<LineParser>(strings)),
      parser_(*own_parser_), lines_(LineParser::parse_padding)
{}

LogFileReader::LogFileReader(uint32_t file_index, LineParser &parser, MalformedLineSink &sink,
                             size_t chunk)
    : file_index_(file_index), sink_(sink), parser_(parser),
      lines_(LineParser::parse_padding, chunk)
{}

Status LogFileReader::open(const std::string &path)
{
    return lines_.open(path);
}

bool LogFileReader::next(LogEvent &event, SourceLocation &where)
{
    return next(event, where, parser_, sink_);
}

bool LogFileReader::next(LogEvent &event, SourceLocation &where, LineParser &parser,
                         MalformedLineSink &sink)
{
    LineReader::Line line;
    while (lines_.next(line)) {
        where = SourceLocation{file_index_, line.number};
        if (line.too_long) {
            sink.malformed(file_index_, line.number,
                           "line longer than " + std::to_string(LineReader::max_line) + " bytes");
            continue;
        }
        size_t size = line.size;
        if (size > 0 && line.data[size - 1] == '\r')
            --size; // tolerate CRLF from files that went through another OS
        // Blank lines carry nothing; a concatenation of logs may leave one.
        if (size == 0 || std::strspn(line.data, " \t") >= size)
            continue;
        std::string problem = parser.parse(line.data, size, line.capacity, event);
        if (problem.empty())
            return true;
        // Cut short by a writer that died, or not a log at all.
        if (line.unfinished && starts_as_log_line(std::string_view(line.data, size)))
            sink.unfinished_last_line(file_index_, line.number);
        else
            sink.malformed(file_index_, line.number, problem);
    }
    return false;
}

} // namespace gdrhook::cli
