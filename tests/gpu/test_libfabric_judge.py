#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The judge of tests/gpu/libfabric.sh (libfabric_table.py) on runs shaped
as one H200 left them (driver 580, libfabric 2.7.0a1): over the shm
provider, device to device, libfabric asks the driver no pointer query at
all (its IPC copies take none), while host to device it asks the context
of both ends of every copy, and gdrhook answers nearly all of them. Each
case writes such a run, edits it, and says what the verdict must be."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
ROUNDS = 2
TABLE = """bytes   iters   total       time     MB/sec    usec/xfer   Mxfers/sec
1       5k      9.7k        0.09s      0.11      17.10       0.06
64k     5k      625m        1.03s    605.12     206.59       0.00
"""


def queries_line(pid, answered, forwarded):
    return json.dumps({"pid": pid, "ev": "queries", "api": "gdrhook",
                       "answered": answered, "forwarded": forwarded}, separators=(",", ":"))


def write_run(out, setup, mode, round_, queries):
    """One pair's files; queries: (answered, forwarded) of each process."""
    directory = os.path.join(out, setup)
    os.makedirs(directory, exist_ok=True)
    name = f"{mode}.{round_}"
    for side in ("server", "client"):
        with open(os.path.join(directory, f"{name}.{side}"), "w") as f:
            f.write(TABLE)
    for pid, (answered, forwarded) in enumerate(queries, start=100):
        lines = ['{"ev":"process","api":"gdrhook"}']
        if answered or forwarded:
            lines.append(queries_line(pid, answered, forwarded))
        with open(os.path.join(directory, f"{name}.events.{pid}.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "runs.txt"), "a") as f:
        f.write(f"{setup} {mode} {round_} server=0 client=0\n")


def recorded(out, host_to_cuda_queries=(66002, 3)):
    """The H200's shape: no queries device to device, many host to device."""
    plain, hooked = host_to_cuda_queries
    for setup, program, answered, forwarded in (
            ("cuda_to_cuda", 0, 0, 0),
            ("host_to_cuda", plain, plain - hooked, hooked)):
        write_run(out, setup, "count", 0, [(0, program), (0, 0)])
        write_run(out, setup, "verify", 0, [(answered, forwarded), (0, 0)])
        for round_ in range(1, ROUNDS + 1):
            write_run(out, setup, "plain", round_, [])
            write_run(out, setup, "hooked", round_, [(answered, forwarded), (0, 0)])


def verdict(edit):
    with tempfile.TemporaryDirectory() as out:
        recorded(out)
        if edit:
            edit(out)
        run = subprocess.run([sys.executable, os.path.join(here, "libfabric_table.py"), out],
                             capture_output=True, text=True)
        return run.returncode, run.stdout


def append(out, setup, name, line):
    with open(os.path.join(out, setup, name), "a") as f:
        f.write(line + "\n")


def failed_run(out):
    runs = os.path.join(out, "runs.txt")
    with open(runs) as f:
        text = f.read()
    with open(runs, "w") as f:
        f.write(text.replace("host_to_cuda plain 1 server=0", "host_to_cuda plain 1 server=1"))


def verify_difference(out):
    append(out, "host_to_cuda", "verify.0.events.100.jsonl",
           '{"ev":"error","msg":"verify: a pointer query answered from the table differs '
           "from the driver's\"}")


def hooked_forwards_all(out):
    for round_ in range(1, ROUNDS + 1):
        with open(os.path.join(out, "host_to_cuda", f"hooked.{round_}.events.100.jsonl"), "w") as f:
            f.write(queries_line(100, 0, 66002) + "\n")


def no_queries_anywhere(out):
    for name in ("count.0", "verify.0") + tuple(f"hooked.{r}" for r in range(1, ROUNDS + 1)):
        with open(os.path.join(out, "host_to_cuda", f"{name}.events.100.jsonl"), "w") as f:
            f.write('{"ev":"process","api":"gdrhook"}\n')


def hooked_asks_where_plain_did_not(out):
    append(out, "cuda_to_cuda", "hooked.1.events.100.jsonl", queries_line(100, 0, 5))


CASES = [
    ("as recorded: a setup that asks nothing leaves the verdict to the other", None, 0),
    ("a pair that exited non-zero", failed_run, 1),
    ("verify found a difference", verify_difference, 1),
    ("hooked sent the driver as many queries as plain", hooked_forwards_all, 1),
    ("no setup asked the driver anything: nothing measured", no_queries_anywhere, 1),
    ("hooked asked the driver where plain asked nothing", hooked_asks_where_plain_did_not, 1),
]


def main():
    failures = 0
    for name, edit, want in CASES:
        rc, stdout = verdict(edit)
        ok = rc == want
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} (exit {rc}, want {want})")
        if not ok:
            print(stdout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
