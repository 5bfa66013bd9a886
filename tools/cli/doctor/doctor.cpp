// SPDX-License-Identifier: MIT OR GPL-2.0-only
// `gdrhook doctor`: probes the machine (machine_probe.cpp), judges what it
// found (doctor_judge.cpp), and prints each finding with its advice.
#include "doctor/doctor.h"

#include "command/exit_code.h"
#include "terminal/terminal_text.h"

#include <ostream>

namespace gdrhook::cli {

namespace {

const char *tag(Finding::Verdict verdict)
{
    switch (verdict) {
    case Finding::Verdict::ok: return "[ok]";
    case Finding::Verdict::note: return "[--]";
    case Finding::Verdict::problem: return "[FAIL]";
    }
    return "[?]";
}

} // namespace

int run_doctor(const DoctorOptions &options, std::ostream &out)
{
    if (options.settings)
        return print_settings(out);
    const std::vector<Finding> findings = judge_machine(probe_machine(options));

    out << "gdrhook doctor\n";
    int problems = 0;
    for (const Finding &f : findings) {
        const std::string label = tag(f.verdict);
        // A finding names files the machine or the caller chose.
        out << "  " << label << std::string(7 - label.size(), ' ') << on_one_line(f.what) << '\n';
        if (!f.advice.empty())
            out << "         -> " << on_one_line(f.advice) << '\n';
        problems += f.verdict == Finding::Verdict::problem;
    }
    if (problems) {
        out << "gdrhook doctor: " << problems << " problem(s) found\n";
        return exit_findings;
    }
    out << "gdrhook doctor: no problems found\n";
    return exit_ok;
}

} // namespace gdrhook::cli
