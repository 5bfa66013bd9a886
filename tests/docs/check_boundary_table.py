#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""docs/shared-node.md's table says, for each thing a user of a shared node
might try, which test holds it. This check keeps that column true: every
row names a test, every quoted Catch2 case it names is a TEST_CASE of
tests/, every script it names is in tests/slurm/ or tests/cli/, every
meson test it names (`slurm plugin`, `cli units`, ...) is one the tree
declares, every VM step it names is one of tests/vm/guest/'s (main.cpp's or
init.sh's), and every
file of the tree the page names exists.

usage: check_boundary_table.py ROOT"""
import glob
import os
import re
import sys


def test_cases(root):
    names = set()
    for path in glob.glob(os.path.join(root, "tests", "**", "*.cpp"), recursive=True):
        text = open(path, errors="replace").read()
        for match in re.finditer(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', text):
            parts = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))
            names.add("".join(parts).replace('\\"', '"'))
    return names


def meson_tests(root):
    names = set()
    for path in glob.glob(os.path.join(root, "**", "meson.build"), recursive=True):
        text = open(path).read()
        for match in re.finditer(r"\btest\(\s*'([^']+)'", text):
            names.add(match.group(1))
        # A test per case of a list, written in the loop or named by a
        # variable: foreach case : [...] / LIST, test('PREFIX' + case, ...)
        lists = {}
        for assign in re.finditer(r"^(\w+) (\+?)= (\[[^\]]*\]|'[^']*')", text, re.M):
            cases = re.findall(r"'([^']+)'", assign.group(3))
            lists[assign.group(1)] = lists.get(assign.group(1), []) + cases if assign.group(2) else cases
        for loop in re.finditer(r"foreach (\w+) : (\[[^\]]*\]|\w+)\n(?:[^\n]*\n)*?\s*test\('([^']*)' \+ \1\b", text):
            cases = (re.findall(r"'([^']+)'", loop.group(2)) if loop.group(2).startswith("[")
                     else lists.get(loop.group(2), []))
            names.update(loop.group(3) + case for case in cases)
    return names


def vm_steps(root):
    guest = os.path.join(root, "tests", "vm", "guest")
    main = open(os.path.join(guest, "main.cpp")).read()
    # A step init.sh runs as a script of its own (its case label), not
    # through the test program.
    init = open(os.path.join(guest, "init.sh")).read()
    return set(re.findall(r'\{\s*"([a-z_0-9]+)"', main)) | set(
        re.findall(r"^\s*([a-z_0-9]+)\) step ", init, re.M))


def problems(root):
    cases, tests, steps = test_cases(root), meson_tests(root), vm_steps(root)
    text = open(os.path.join(root, "docs", "shared-node.md")).read()
    section = text.split("## The table", 1)[-1].split("\n## ", 1)[0]
    # Rows of three cells, less the header and the bold group rows.
    rows = [line for line in section.splitlines() if line.startswith("| ")
            and line.count(" | ") == 2 and not line.startswith("| a user tries")
            and not line.startswith("| **")]
    found = []
    held_by = [row.rstrip().rstrip("|").split(" | ")[-1] for row in rows]
    for cell in held_by:
        named = re.findall(r"`([a-z0-9 _/-]+)`", cell)
        meson = [n for n in named if n in tests or n.split(" / ")[0] in tests]
        suites = [n for n in named if n in ("kmod", "packaging", "cli")]
        if not meson and not suites:
            found.append(f"row names no meson test: {cell.strip()}")
        for case in re.findall(r'"([^"]+)"', cell):
            if case not in cases:
                found.append(f"no TEST_CASE \"{case}\" in tests/")
        for script in re.findall(r"([a-z_0-9]+\.(?:sh|cpp))", cell):
            if not glob.glob(os.path.join(root, "tests", "**", script), recursive=True):
                found.append(f"no {script} under tests/")
        for step in re.findall(r"VM step `([a-z_0-9]+)`", cell):
            if step not in steps:
                found.append(f"no VM step {step} in tests/vm/guest/ (main.cpp, init.sh)")
    for path in sorted(set(re.findall(r"`((?:tools|tests|cache|kmod|hook|packaging)/[A-Za-z0-9_./-]+)`", text))):
        if not os.path.exists(os.path.join(root, path.rstrip("/"))):
            found.append(f"docs/shared-node.md names {path}, which does not exist")
    if len(held_by) < 10:
        found.append(f"only {len(held_by)} rows in docs/shared-node.md's table")
    return found, len(held_by)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found, rows = problems(root)
    for line in found:
        print(line)
    print(f"check_boundary_table: {rows} rows, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
