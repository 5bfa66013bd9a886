// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Reading the event log back in tests: each line is a flat JSON object of
// strings and integers, so a small strict reader is enough here (the CLI
// uses a real JSON library).
#pragma once

#include <map>
#include <string>
#include <vector>

struct EventLine {
    std::map<std::string, std::string> fields; // values as written, quotes removed
    const std::string &operator[](const std::string &key) const;
    long long number(const std::string &key) const;
    bool has(const std::string &key) const { return fields.count(key) != 0; }
};

// Parses one line; returns false if it is not a JSON object. Nested values
// (the process line's arrays and objects) are kept as written.
bool parse_event_line(const std::string &line, EventLine &out);

// Every line of a file (a malformed line fails the calling test).
std::vector<EventLine> read_event_file(const std::string &path);

// The same without the `process` lines: what the program's calls and the
// worker recorded.
std::vector<EventLine> read_recorded_events(const std::string &path);

struct RunResult {
    int exit_status = -1;
    std::string output; // stdout and stderr together
};

// Runs argv with `env` added to the environment; returns its status and output.
RunResult run_program(const std::vector<std::string> &argv,
                      const std::map<std::string, std::string> &env);

struct SplitRunResult {
    int exit_status = -1;
    std::string out, err; // its stdout and its stderr, apart
};

// The same, its stdout and stderr kept apart (each to a file first, so a
// program that writes much to one never blocks on the other); killed
// after two minutes.
SplitRunResult run_program_apart(const std::vector<std::string> &argv,
                                 const std::map<std::string, std::string> &env);

// How many lines of `text` hold `part`.
size_t lines_with(const std::string &text, const std::string &part);

// In a forked child: adds `env` to the environment and executes argv
// (exit status 127 if it cannot).
[[noreturn]] void exec_program(const std::vector<std::string> &argv,
                               const std::map<std::string, std::string> &env);

// The environment of a program run under the shim over the fake driver
// with pin-on-alloc (dma-buf backend), verify mode, and its event log at
// `events`.
std::map<std::string, std::string> pinning_environment(const std::string &events);

// The number after "key=" in a program's output (the test fails if there
// is none).
long long output_field(const std::string &output, const std::string &key);

// A fresh, empty directory under the build tree's temp area.
std::string make_temp_dir();

// Build-tree paths, passed by meson as environment variables.
std::string build_path(const char *variable);
