#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The judge of tests/gpu/ucx_table.sh (ucx_table.py) on recorded runs.

ucx_judge_cases/h200 holds the judged lines of one whole table on one H200
(driver 580, UCX 1.22.0), cut to what the judge reads. There a destroyed
graph's 32 MiB stay in the device's graph pool in every setup, gdrhook or
not, and the judge must measure GDRHOOK_UCX=on against what the driver
itself keeps (driver_kept=), not against nothing. Each case edits a copy of
the recording and says what the verdict must be."""
import functools
import os
import re
import shutil
import sys

from table_judge_cases import here, run_cases, verdict

RECORDING = os.path.join(here, "ucx_judge_cases", "h200")
MIB = 1 << 20


def recorded(out):
    shutil.copytree(os.path.join(RECORDING, "cells"), os.path.join(out, "cells"))


def set_field(out, run, path, field, value):
    """Sets FIELD of PATH's line in cells/RUN.out."""
    name = os.path.join(out, "cells", run + ".out")
    with open(name) as f:
        text = f.read()
    line = re.compile(rf"^(path={re.escape(path)} .*\b{field}=)-?[0-9.]+", re.M)
    text, n = line.subn(lambda m: m.group(1) + str(value), text)
    assert n == 1, f"{run}: no {path} line with {field}"
    with open(name, "w") as f:
        f.write(text)


def no_run(out):
    cells = os.path.join(out, "cells")
    shutil.rmtree(cells)
    os.mkdir(cells)


CASES = [
    # name, edit of the recording, exit status, a line the output must hold
    ("as recorded: the graph pool's 32 MiB are the driver's own", None, 0,
     "UCX TABLE: PASS"),
    ("gdrhook on holding 8 MiB beyond what the driver keeps",
     lambda out: set_field(out, "on-bistro", "cuGraphDestroy", "mem_held", 40 * MIB), 1,
     "on/bistro/cuGraphDestroy: 40.0 MiB still held"),
    # Without gdrhook UCX misses cuCtxDestroy and its stale registration
    # holds 20 MiB: gdrhook on holding the same is still a failure, since
    # the driver itself keeps nothing there.
    ("gdrhook on holding what UCX alone leaks",
     lambda out: set_field(out, "on-reloc", "cuCtxDestroy", "mem_held", 20 * MIB), 1,
     "on/reloc/cuCtxDestroy: 20.0 MiB still held"),
    ("the driver keeping more under gdrhook",
     lambda out: set_field(out, "on-none", "cuMemFree_v2", "driver_kept", 16 * MIB), 1,
     "on/none/cuMemFree_v2: the driver keeps 16.0 MiB"),
    ("no run at all", no_run, 1, "no workload's line"),
]


def output_holds(stdout, case):
    return repr(case[3]), case[3] in stdout


if __name__ == "__main__":
    sys.exit(run_cases(CASES, functools.partial(verdict, "ucx_table.py", recorded), output_holds))
