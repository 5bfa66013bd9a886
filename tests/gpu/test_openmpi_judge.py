#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The judge of tests/gpu/openmpi.sh (openmpi_table.py) on runs shaped as
its mpirun leaves them: one "mpirun=RC" per run, rank 0's "size= iters=
usec=" lines, both ranks' gdrhook logs. Both setups ask the driver (Open
MPI asks about the buffer of every send and receive). Each case writes
such a run, edits it, and says what the verdict must be and which lines
the table must show."""
import functools
import sys

from table_judge_cases import ROUNDS, edit_runs, run_cases, set_queries, verdict, write_table

SIZES = (1, 65536)
PROGRAM_QUERIES, HOOKED_FORWARDED = 40000, 500


def rank0_output():
    lines = ["cuda-aware at run time: 1"]
    lines += [f"size={size} iters=5000 usec={2.5 + size / 20000:.3f}" for size in SIZES]
    lines.append(f"data checked: {len(SIZES)} sizes")
    return "\n".join(lines) + "\n"


def recorded(out):
    half, answered = PROGRAM_QUERIES // 2, (PROGRAM_QUERIES - HOOKED_FORWARDED) // 2
    hooked = [(answered, HOOKED_FORWARDED // 2)] * 2
    write_table(out, [(setup, [(0, half)] * 2, hooked) for setup in ("cuda_to_cuda", "host_to_cuda")],
                {"out": rank0_output()}, "mpirun=0")


def failed_mpirun(out):
    edit_runs(out, "cuda_to_cuda hooked 2 mpirun=0", "cuda_to_cuda hooked 2 mpirun=1")


def hooked_forwards_all(out):
    for round_ in range(1, ROUNDS + 1):
        for pid in (100, 101):
            set_queries(out, "cuda_to_cuda", f"hooked.{round_}", pid, 0, PROGRAM_QUERIES // 2)


def rows_shown(stdout, case):
    """Whether the table has a plain-against-hooked line for every size of
    both setups: rank 0's lines were read."""
    return "latency rows", sum("hooked/plain" in line for line in stdout.splitlines()) == 2 * len(SIZES)


CASES = [
    ("as recorded", None, 0),
    ("an mpirun that exited non-zero", failed_mpirun, 1),
    ("hooked sent the driver as many queries as plain", hooked_forwards_all, 1),
]


if __name__ == "__main__":
    sys.exit(run_cases(CASES, functools.partial(verdict, "openmpi_table.py", recorded), rows_shown))
