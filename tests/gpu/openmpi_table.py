#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The table and the verdict of tests/gpu/openmpi.sh, judged as
libfabric_table.py judges libfabric's runs (the same rules, the same
functions), from what its runs of mpi_pingpong left.

usage: openmpi_table.py OUT_DIR

OUT_DIR/runs.txt: one line per mpirun, "SETUP MODE ROUND mpirun=RC".
OUT_DIR/SETUP/MODE.ROUND.out: rank 0's stdout, one "size=BYTES iters=N
usec=USEC" line per size; MODE.ROUND.events.PID.jsonl: gdrhook's logs of
both ranks in the hooked modes.
"""
import re
import sys

from libfabric_table import main

ROW = re.compile(r"^size=(\d+) iters=\d+ usec=([0-9.]+)$")


def rank0_latencies(directory, name):
    """{size: usec} of a run, from rank 0's lines (none where it left no
    output)."""
    path = directory / f"{name}.out"
    if not path.exists():
        return {}
    rows = {}
    for line in path.read_text(errors="replace").splitlines():
        match = ROW.match(line.strip())
        if match:
            rows[int(match.group(1))] = float(match.group(2))
    return rows


if __name__ == "__main__":
    sys.exit(main("OPENMPI", rank0_latencies))
