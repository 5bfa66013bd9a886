#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The judge of tests/gpu/openmpi.sh (openmpi_table.py) on runs shaped as
its mpirun leaves them: one "mpirun=RC" per run, rank 0's "size= iters=
usec=" lines, both ranks' gdrhook logs. Both setups ask the driver (Open
MPI asks about the buffer of every send and receive). Each case writes
such a run, edits it, and says what the verdict must be and which lines
the table must show."""
import os
import subprocess
import sys
import tempfile

from test_libfabric_judge import queries_line

here = os.path.dirname(os.path.abspath(__file__))
ROUNDS = 2
SIZES = (1, 65536)
PROGRAM_QUERIES, HOOKED_FORWARDED = 40000, 500


def write_run(out, setup, mode, round_, queries):
    """One mpirun's files; queries: (answered, forwarded) of each rank."""
    directory = os.path.join(out, setup)
    os.makedirs(directory, exist_ok=True)
    name = f"{mode}.{round_}"
    with open(os.path.join(directory, f"{name}.out"), "w") as f:
        f.write("cuda-aware at run time: 1\n")
        for size in SIZES:
            f.write(f"size={size} iters=5000 usec={2.5 + size / 20000:.3f}\n")
        f.write(f"data checked: {len(SIZES)} sizes\n")
    for pid, (answered, forwarded) in enumerate(queries, start=100):
        with open(os.path.join(directory, f"{name}.events.{pid}.jsonl"), "w") as f:
            f.write(queries_line(pid, answered, forwarded) + "\n")
    with open(os.path.join(out, "runs.txt"), "a") as f:
        f.write(f"{setup} {mode} {round_} mpirun=0\n")


def recorded(out):
    half, answered = PROGRAM_QUERIES // 2, (PROGRAM_QUERIES - HOOKED_FORWARDED) // 2
    forwarded = HOOKED_FORWARDED // 2
    for setup in ("cuda_to_cuda", "host_to_cuda"):
        write_run(out, setup, "count", 0, [(0, half), (0, half)])
        write_run(out, setup, "verify", 0, [(answered, forwarded)] * 2)
        for round_ in range(1, ROUNDS + 1):
            write_run(out, setup, "plain", round_, [])
            write_run(out, setup, "hooked", round_, [(answered, forwarded)] * 2)


def verdict(edit):
    with tempfile.TemporaryDirectory() as out:
        recorded(out)
        if edit:
            edit(out)
        run = subprocess.run([sys.executable, os.path.join(here, "openmpi_table.py"), out],
                             capture_output=True, text=True)
        return run.returncode, run.stdout


def failed_mpirun(out):
    runs = os.path.join(out, "runs.txt")
    with open(runs) as f:
        text = f.read()
    with open(runs, "w") as f:
        f.write(text.replace("cuda_to_cuda hooked 2 mpirun=0", "cuda_to_cuda hooked 2 mpirun=1"))


def hooked_forwards_all(out):
    for round_ in range(1, ROUNDS + 1):
        for pid in (100, 101):
            name = f"hooked.{round_}.events.{pid}.jsonl"
            with open(os.path.join(out, "cuda_to_cuda", name), "w") as f:
                f.write(queries_line(pid, 0, PROGRAM_QUERIES // 2) + "\n")


def rows_shown(stdout):
    """Whether the table has a plain-against-hooked line for every size of
    both setups: rank 0's lines were read."""
    return sum("hooked/plain" in line for line in stdout.splitlines()) == 2 * len(SIZES)


CASES = [
    ("as recorded", None, 0),
    ("an mpirun that exited non-zero", failed_mpirun, 1),
    ("hooked sent the driver as many queries as plain", hooked_forwards_all, 1),
]


def main():
    failures = 0
    for name, edit, want in CASES:
        rc, stdout = verdict(edit)
        ok = rc == want and rows_shown(stdout)
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} (exit {rc}, want {want}; "
              f"latency rows {'shown' if rows_shown(stdout) else 'MISSING'})")
        if not ok:
            print(stdout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
