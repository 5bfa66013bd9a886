#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The judge of tests/gpu/libfabric.sh (libfabric_table.py) on runs shaped
as one H200 left them (driver 580, libfabric 2.7.0a1): over the shm
provider, device to device, libfabric asks the driver no pointer query at
all (its IPC copies take none), while host to device it asks the context
of both ends of every copy, and gdrhook answers nearly all of them. Each
case writes such a run, edits it, and says what the verdict must be."""
import functools
import os
import sys

from table_judge_cases import (ROUNDS, edit_runs, queries_line, run_cases, set_queries,
                               verdict, write_table)

TABLE = """bytes   iters   total       time     MB/sec    usec/xfer   Mxfers/sec
1       5k      9.7k        0.09s      0.11      17.10       0.06
64k     5k      625m        1.03s    605.12     206.59       0.00
"""
PLAIN, HOOKED_FORWARDED = 66002, 3


def recorded(out):
    """The H200's shape: no queries device to device, many host to device."""
    hooked = (PLAIN - HOOKED_FORWARDED, HOOKED_FORWARDED)
    write_table(out, [("cuda_to_cuda", [(0, 0), (0, 0)], [(0, 0), (0, 0)]),
                      ("host_to_cuda", [(0, PLAIN), (0, 0)], [hooked, (0, 0)])],
                {"server": TABLE, "client": TABLE}, "server=0 client=0")


def append(out, setup, name, line):
    with open(os.path.join(out, setup, name), "a") as f:
        f.write(line + "\n")


def failed_run(out):
    edit_runs(out, "host_to_cuda plain 1 server=0", "host_to_cuda plain 1 server=1")


def verify_difference(out):
    append(out, "host_to_cuda", "verify.0.events.100.jsonl",
           '{"ev":"error","msg":"verify: a pointer query answered from the table differs '
           "from the driver's\"}")


def hooked_forwards_all(out):
    for round_ in range(1, ROUNDS + 1):
        set_queries(out, "host_to_cuda", f"hooked.{round_}", 100, 0, PLAIN)


def no_queries_anywhere(out):
    for name in ("count.0", "verify.0") + tuple(f"hooked.{r}" for r in range(1, ROUNDS + 1)):
        set_queries(out, "host_to_cuda", name, 100, 0, 0)


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


if __name__ == "__main__":
    sys.exit(run_cases(CASES, functools.partial(verdict, "libfabric_table.py", recorded)))
