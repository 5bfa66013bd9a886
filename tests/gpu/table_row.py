#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""One row of tests/gpu/run.sh's table: a program run plain and under the
shim, judged from what the run left in its directory.

usage: table_row.py --header
       table_row.py NAME MODE DIR WINDOW PLAIN_RC HOOKED_RC PLAIN_S HOOKED_S CLI

DIR holds plain.out/.err, hooked.out/.err and the hooked run's logs
(events.PID.jsonl, one per process). Prints the row, then one indented line
per problem (DIR/notes.txt has them and the frees by API), and exits 1
if there is any:
  - the frees the log shows differ from the frees the program made (its
    "frees_made=N" on stdout, or its "expect KEY=N", "expect_min KEY=N",
    "expect_same KEY KEY" lines on stderr, checked against
    tests/gpu/count_events.py's figures; the hooked run's own lines; the
    values several processes give for one key add up);
  - pins and unpins differ, no pin at all under GDRHOOK_PIN=alloc (the
    default of run.sh), an unpin failed, verify mode found a stale hit (an
    `error` event whose msg starts with "verify", or the exit report's
    "N stale hits"), any other `error` event, or `gdrhook log check` (CLI)
    fails;
  - stdout differs (NVIDIA tools' "==PROF==" and "[PID] ..." lines with
    numbers masked), stderr differs once the lines the shim adds are left
    out (see STDERR_FILTER), on either stream beyond what differs by nature
    between two runs (see mask_natural_differences; the lines of a job of
    several processes compared as a multiset), an exit status is not 0;
  - the hooked run left more GPU memory in use than the plain one
    (mem_used_delta=N on stderr) by more than MEM_SLACK bytes.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import count_events  # noqa: E402

MEM_SLACK = 2 << 20
# What may differ on stderr between the plain and the hooked run: the
# shim's own diagnostics ("gdrhook[PID] ..."), the GPU memory the program
# measured (judged on its own, with MEM_SLACK), and addresses (0x...:
# address space layout differs from run to run), which are masked.
STDERR_FILTER = re.compile(r"^gdrhook\[\d+\] |mem_used_delta=")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
COLUMNS = [("program", 18), ("mode", 11), ("frees seen/made", 16), ("pins", 6),
           ("unpins", 7), ("verify", 7), ("mem MiB plain/hooked", 21), ("check", 6),
           ("stdout", 7), ("exit", 6), ("time x", 6)]


def row(values):
    return " ".join(f"{str(v):<{w}}" for v, (_, w) in zip(values, COLUMNS)).rstrip()


def header():
    print(row([name for name, _ in COLUMNS]))
    print(row(["-" * len(name) for name, _ in COLUMNS]))


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def pinnable_allocations(logs):
    """Allocations pin-on-alloc pins when they are made: device, pitched or
    VMM-mapped memory of at least GDRHOOK_PIN_MIN_SIZE (1 MiB unless set).
    Graph, stream-ordered (pinned at their first lookup), managed, host
    and IPC memory are not, nor what the log says it skipped."""
    min_size = int(os.environ.get("GDRHOOK_PIN_MIN_SIZE", 1 << 20))
    found = 0
    for path in logs:
        with open(path, errors="replace") as f:
            for line in f:
                if '"ev":"skip"' in line: # a documented skip (docs/log-format.md)
                    found -= 1
                    continue
                if '"ev":"alloc"' not in line:
                    continue
                kind = re.search(r'"kind":"(\w+)"', line)
                size = re.search(r'"size":(\d+)', line)
                rc = re.search(r'"rc":(-?\d+)', line)
                if (kind and kind.group(1) in ("device", "pitch", "vmm") and size and
                        int(size.group(1)) >= min_size and rc and rc.group(1) == "0"):
                    found += 1
    return found > 0


# Lines NVIDIA's tools add to the program's own (Nsight Compute's
# "==PROF== Connected to process 1234 ..." and "[1234] prog@host"):
# compared with their numbers masked, as pids differ from run to run.
TOOL_LINE = re.compile(r"^(==(PROF|WARNING)==|\[\d+\] \S+@\S+$)")
DIGITS = re.compile(r"\d+")


def program_stdout(text):
    return [DIGITS.sub("#", line) if TOOL_LINE.search(line) else line
            for line in text.splitlines()]


# What differs by nature between two runs of one program, in the standard
# log-line formats of the frameworks the table runs; masked before the
# comparison, everything else on the line still compared:
#   - glog's prefix, as torchrun and PyTorch's C++ side write it:
#     "W1127 12:50:52.445000 4505 torch/distributed/run.py:851] ..." and
#     "[rank0]:[W1127 12:50:53.796069434 ProcessGroupNCCL.cpp:1496] ...":
#     the date, time and pid (the level letter and the rank stay);
#   - NCCL's "host:pid:tid [rank] NCCL ..." prefix: host, pid and thread;
#   - in NCCL's INFO lines (NCCL_DEBUG=INFO), every number: they name
#     ports, IP addresses, CPU cores the proxy thread landed on and
#     timings; the words of the line, and how many such lines there are,
#     are still compared. NCCL's WARN lines keep their numbers.
GLOG_PREFIX = re.compile(r"^((?:\[rank\d+\]:)?\[?)([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+(?: +\d+)? ")
NCCL_PREFIX = re.compile(r"^\S+:\d+:\d+ (\[\d+\] NCCL )")
NCCL_INFO = re.compile(r"^<host:pid:tid> \[\d+\] NCCL INFO ")


def mask_natural_differences(line):
    line = GLOG_PREFIX.sub(r"\1\2<date time pid> ", line)
    line = NCCL_PREFIX.sub(r"<host:pid:tid> \1", line)
    if NCCL_INFO.search(line):
        line = DIGITS.sub("#", ADDRESS.sub("0x?", line))
    return line


def program_lines(text, processes=1, leave_out=None):
    """The program's own lines on one stream, as compared between the
    plain and the hooked run: NVIDIA tools' lines and what differs by
    nature masked, LEAVE_OUT's lines left out. The lines of a job of
    several processes interleave as the processes' timing has it, so there
    they are compared as a multiset (sorted); one process's are compared
    in their order."""
    lines = [mask_natural_differences(line) for line in program_stdout(text)
             if not (leave_out and leave_out.search(line))]
    return sorted(lines) if processes > 1 else lines


def program_stderr(text, processes=1):
    """stderr without the shim's own lines, addresses masked."""
    return [ADDRESS.sub("0x?", line)
            for line in program_lines(text, processes, STDERR_FILTER)]


def mem_delta(text):
    found = re.findall(r"mem_used_delta=(-?\d+)", text)
    return int(found[-1]) if found else None


def mib(value):
    return "-" if value is None else f"{value / (1 << 20):.1f}"


def expectations(err, counts, problems):
    """Checks the program's expect lines; returns what it said it freed
    ("-" if it said other things only, None if nothing). Each process of a
    program speaks for itself and the logs of all of them are counted
    together, so the values of an "expect"/"expect_min" key add up."""
    said = {}
    same = []
    for line in err.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("expect", "expect_min", "expect_same"):
            continue
        if parts[0] == "expect_same":
            same.append((parts[1], parts[2]))
            continue
        key, value = parts[1].split("=")
        said[(parts[0], key)] = said.get((parts[0], key), 0) + int(value)
    for a, b in same:
        if counts[a] != counts[b]:
            problems.append(f"{a} {counts[a]} != {b} {counts[b]}")
    made = "-" if said or same else None
    for (kind, key), value in said.items():
        if key == "frees":
            made = str(value) if kind == "expect" else f">={value}"
        if kind == "expect" and counts[key] != value:
            problems.append(f"{key} {counts[key]} != {value}")
        if kind == "expect_min" and counts[key] < value:
            problems.append(f"{key} {counts[key]} < {value}")
    return made


def log_check(cli, logs, d):
    if not os.access(cli, os.X_OK):
        return "n/a", f"no gdrhook CLI at {cli}"
    result = subprocess.run([cli, "log", "check", *logs], capture_output=True, text=True)
    with open(os.path.join(d, "check.txt"), "w") as f:
        f.write(result.stdout + result.stderr)
    if result.returncode == 0:
        return "pass", None
    first = (result.stdout + result.stderr).strip().splitlines()[:1]
    return "FAIL", "log check: " + (first[0] if first else f"exit {result.returncode}")


def judge(argv):
    name, mode, d, window = argv[0], argv[1], argv[2], argv[3] == "1"
    plain_rc, hooked_rc = int(argv[4]), int(argv[5])
    plain_s, hooked_s = float(argv[6]), float(argv[7])
    cli = argv[8]
    plain_out, hooked_out = read(f"{d}/plain.out"), read(f"{d}/hooked.out")
    plain_err, hooked_err = read(f"{d}/plain.err"), read(f"{d}/hooked.err")
    problems, notes = [], []

    logs = sorted(glob.glob(f"{d}/events.*.jsonl"))
    counts = count_events.count(count_events.load(logs), window)
    if not logs:
        problems.append("no event log")

    made = None
    m = re.search(r"frees_made=(\d+)", hooked_out)
    if m:
        made = m.group(1)
        if counts["frees"] != int(made):
            problems.append(f"frees {counts['frees']} != {made}")
    said = expectations(hooked_err, counts, problems)
    if said is not None and (made is None or said != "-"):
        made = said
    if made is None:
        problems.append("the program said nothing of its frees")

    if counts["pins"] != counts["unpins"]:
        problems.append(f"pins {counts['pins']} != unpins {counts['unpins']}")
    if (os.environ.get("GDRHOOK_PIN", "alloc") == "alloc" and counts["pins"] == 0 and
            pinnable_allocations(logs)):
        problems.append("pin-on-alloc pinned nothing")
    if counts["failed_unpins"]:
        problems.append(f"{counts['failed_unpins']} failed unpins")
    stale = sum(int(n) for n in re.findall(r"verify: \d+ checks, (\d+) stale hits", hooked_err))
    verify = max(stale, counts["verify_findings"])
    if verify:
        problems.append(f"verify: {counts['verify_findings']} findings in the log, "
                        f"{stale} stale hits reported")
    if counts["other_errors"]:
        problems.append(f"{counts['other_errors']} error events that are not verify findings")
    if counts["failed_frees"]:
        notes.append(f"{counts['failed_frees']} frees the driver refused (not in frees seen)")

    check, why = log_check(cli, logs, d) if logs else ("n/a", None)
    if why:
        problems.append(why)

    processes = max(counts["pids"], 1)
    same_out = program_lines(plain_out, processes) == program_lines(hooked_out, processes)
    if not same_out:
        problems.append(f"stdout differs (diff {d}/plain.out {d}/hooked.out)")
    if program_stderr(plain_err, processes) != program_stderr(hooked_err, processes):
        problems.append(f"stderr differs beyond the shim's lines (diff {d}/plain.err {d}/hooked.err)")
    if plain_rc != 0 or hooked_rc != 0:
        problems.append(f"exit status {plain_rc} plain, {hooked_rc} hooked")

    plain_mem, hooked_mem = mem_delta(plain_err), mem_delta(hooked_err)
    if plain_mem is None or hooked_mem is None:
        problems.append("no mem_used_delta=N on stderr")
    elif hooked_mem - plain_mem > MEM_SLACK:
        problems.append(f"the hooked run kept {hooked_mem - plain_mem} bytes more GPU memory")

    ratio = f"{hooked_s / plain_s:.2f}" if plain_s > 0 else "-"
    print(row([name, mode, f"{counts['frees']}/{made if made is not None else '-'}",
               counts["pins"], counts["unpins"], verify, f"{mib(plain_mem)}/{mib(hooked_mem)}",
               check, "same" if same_out else "DIFF", f"{plain_rc}/{hooked_rc}", ratio]))
    by_api = ", ".join(f"{k}={v}" for k, v in sorted(counts["frees_by_api"].items()))
    if counts["ctx_destroy"]:
        by_api += f"{', ' if by_api else ''}ctx_destroy={counts['ctx_destroy']}"
    notes.append(f"frees: {by_api or 'none'}; {counts['pids']} process(es); "
                 f"{plain_s:.1f} s plain, {hooked_s:.1f} s hooked")
    for p in problems:
        print(f"    ! {p}")
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("\n".join(problems + notes) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--header"]:
        header()
        sys.exit(0)
    if len(sys.argv) != 10:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(judge(sys.argv[1:]))
