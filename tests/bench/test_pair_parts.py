#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""pair_parts.py --check passes on this tree, and fails, naming the part,
on a copy of the recorder where one part's text is gone or twice."""
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)
import pair_parts  # noqa: E402


def run_check(tree):
    return subprocess.run([sys.executable, os.path.join(here, "pair_parts.py"), "--check", tree],
                          capture_output=True, text=True)


def tree_with(text):
    tree = tempfile.mkdtemp(prefix="gdrhook-pair-parts-")
    os.makedirs(os.path.join(tree, os.path.dirname(pair_parts.SOURCE)))
    with open(os.path.join(tree, pair_parts.SOURCE), "w") as f:
        f.write(text)
    return tree


failures = []
ok = run_check(root)
if ok.returncode != 0:
    failures.append(f"this tree: {ok.stderr.strip()}")

with open(os.path.join(root, pair_parts.SOURCE)) as f:
    source = f.read()
for part, (_, edits) in pair_parts.PARTS.items():
    find = edits[-1][0]
    for how, text in (("gone", source.replace(find, "")), ("twice", source + find)):
        tree = tree_with(text)
        try:
            result = run_check(tree)
            if result.returncode == 0 or f"part {part}:" not in result.stderr:
                failures.append(f"{part}'s edit {how}: --check said {result.returncode} "
                                f"{result.stderr.strip()!r}")
        finally:
            shutil.rmtree(tree)

for failure in failures:
    print("FAIL:", failure)
print(f"{len(pair_parts.PARTS)} parts, {len(failures)} failures")
sys.exit(1 if failures else 0)
