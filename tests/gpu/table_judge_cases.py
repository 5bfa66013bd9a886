# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""What the tests of the GPU tables' judges share: the case loop, and the
runs libfabric.sh and openmpi.sh leave, written as their judges
(libfabric_table.py, openmpi_table.py) read them.

A run is one pair of processes (or one mpirun): its output files, one
gdrhook log per process that asked the driver anything, and its line in
runs.txt. A table is, per setup, a count run (every query sent to the
driver), a verify run, and ROUNDS plain and hooked rounds. A case is
(name, edit of the written table, exit status the judge must give, ...):
each test keeps only its own cases."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
ROUNDS = 2
PROCESS_LINE = '{"ev":"process","api":"gdrhook"}'


def queries_line(pid, answered, forwarded):
    return json.dumps({"pid": pid, "ev": "queries", "api": "gdrhook",
                       "answered": answered, "forwarded": forwarded}, separators=(",", ":"))


def set_queries(out, setup, name, pid, answered, forwarded):
    """Writes PID's gdrhook log of run NAME: its process line, and its
    queries line where it asked the driver anything."""
    lines = [PROCESS_LINE]
    if answered or forwarded:
        lines.append(queries_line(pid, answered, forwarded))
    with open(os.path.join(out, setup, f"{name}.events.{pid}.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_run(out, setup, mode, round_, queries, outputs, codes):
    """One run's files. queries: (answered, forwarded) of each process;
    outputs: {file suffix: text}; codes: the exit statuses runs.txt gives."""
    directory = os.path.join(out, setup)
    os.makedirs(directory, exist_ok=True)
    name = f"{mode}.{round_}"
    for suffix, text in outputs.items():
        with open(os.path.join(directory, f"{name}.{suffix}"), "w") as f:
            f.write(text)
    for pid, (answered, forwarded) in enumerate(queries, start=100):
        set_queries(out, setup, name, pid, answered, forwarded)
    with open(os.path.join(out, "runs.txt"), "a") as f:
        f.write(f"{setup} {mode} {round_} {codes}\n")


def write_table(out, setups, outputs, codes):
    """Every run of a table. setups: (setup, the count run's queries, the
    verify and hooked runs' queries), queries as write_run takes them."""
    for setup, counted, hooked in setups:
        write_run(out, setup, "count", 0, counted, outputs, codes)
        write_run(out, setup, "verify", 0, hooked, outputs, codes)
        for round_ in range(1, ROUNDS + 1):
            write_run(out, setup, "plain", round_, [], outputs, codes)
            write_run(out, setup, "hooked", round_, hooked, outputs, codes)


def edit_runs(out, old, new):
    """Replaces OLD in runs.txt by NEW: a run's exit statuses."""
    runs = os.path.join(out, "runs.txt")
    with open(runs) as f:
        text = f.read()
    assert old in text, f"runs.txt holds no {old!r}"
    with open(runs, "w") as f:
        f.write(text.replace(old, new))


def run_judge(judge, out):
    """(exit status, stdout) of the judge JUDGE (a file beside this one)
    on OUT."""
    run = subprocess.run([sys.executable, os.path.join(here, judge), out],
                         capture_output=True, text=True)
    return run.returncode, run.stdout


def verdict(judge, record, edit):
    """The judge's (exit status, stdout) on what RECORD(out) writes,
    edited by EDIT(out) where given."""
    with tempfile.TemporaryDirectory() as out:
        record(out)
        if edit:
            edit(out)
        return run_judge(judge, out)


def run_cases(cases, judged, shown=None):
    """Runs each case through JUDGED(edit) -> (exit status, stdout) and
    prints a line for it, with the output of each that went wrong; returns
    main's exit status. SHOWN(stdout, case), where given, says what the
    output must also hold and whether it does."""
    failures = 0
    for case in cases:
        name, edit, want = case[:3]
        rc, stdout = judged(edit)
        ok, note = rc == want, ""
        if shown:
            what, held = shown(stdout, case)
            ok &= held
            note = f"; {what} {'shown' if held else 'MISSING'}"
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} (exit {rc}, want {want}{note})")
        if not ok:
            print(stdout)
    print(f"{len(cases) - failures} of {len(cases)} cases")
    return 1 if failures else 0
