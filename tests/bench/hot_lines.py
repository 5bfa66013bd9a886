#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""How many cache lines one cuMemAlloc+cuMemFree pair touches through the
shim, counted with valgrind's lackey against the fake driver.

On a real GPU the driver evicts the shim between two calls, so these
lines, not the instructions, are what the shim costs (cache/prim/hot_path.h).
The count is exact and repeatable where timings are not: use it to judge a
change to the hot path before timing it on the GPU (tests/gpu/overhead.py).

Prints, for the last pair: the shim's code lines, the shim's data lines,
the lines of anonymous memory (hot arena, thread state, stack) touched
beyond what the same pair touches without the shim, and the lines of the
journal (the queue's cells, in a file mapping where an event log is on).

usage: hot_lines.py PAIRS_PROGRAM SHIM FAKE_DRIVER_DIR"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

program, shim, fake_dir = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
if not shutil.which("valgrind"):
    sys.exit("hot_lines.py: valgrind not found (Debian: apt-get install valgrind)")


def trace(preload):
    work = tempfile.mkdtemp(prefix="gdrhook-lines-")
    log = os.path.join(work, "lackey.txt")
    env = dict(os.environ, LD_LIBRARY_PATH=fake_dir,
               GDRHOOK_EVENTS=os.path.join(work, "events.%p.jsonl"))
    if preload:
        env["LD_PRELOAD"] = shim
    run = subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes",
                          f"--log-file={log}", program], env=env, capture_output=True,
                         text=True, check=True)
    begin, end = (int(x, 16) for x in run.stdout.split()[1:3])
    maps = []
    for line in run.stderr.splitlines():
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)", line)
        if m:
            maps.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4)))
    pairs, current = [], None
    with open(log) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) < 2 or line.startswith("=="):
                continue
            kind, address = fields[0], int(fields[1].split(",")[0], 16)
            if kind in ("S", "M") and address in (begin, end):
                if address == begin:
                    current = collections.defaultdict(set)
                elif current is not None:
                    pairs.append(current)
                    current = None
                continue
            if current is not None:
                current["I" if kind == "I" else "D"].add(address >> 6)
    shutil.rmtree(work)

    def region(line):
        address = line << 6
        for low, high, perms, name in maps:
            if low <= address < high:
                if name == shim or os.path.basename(name) == os.path.basename(shim):
                    return "shim code" if "x" in perms else "shim data"
                if name.endswith(".journal"):
                    return "journal"  # the queue's cells (cache/events/journal.h)
                return "anonymous" if not name or name.startswith("[") else "other"
        return "other"

    counts = collections.Counter()
    for kind, lines in pairs[-1].items():
        for line in lines:
            counts[(kind, region(line))] += 1
    return counts


hooked, plain = trace(True), trace(False)
print(f"shim code lines: {hooked[('I', 'shim code')]}")
print(f"shim data lines: {hooked[('D', 'shim data')]}")
print(f"anonymous lines added (arena, thread state, stack): "
      f"{hooked[('D', 'anonymous')] - plain[('D', 'anonymous')]}")
print(f"journal lines (the queue's cells, with an event log): {hooked[('D', 'journal')]}")
