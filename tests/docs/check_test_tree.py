#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The tests keep each helper once and each name once:

- a CUDA call is checked by tests/programs/cuda_checks.h alone: no other
  file under tests/ defines a macro that compares a call's result with
  CUDA_SUCCESS or cudaSuccess and says it or exits, or a function
  `check(CUresult ...)`;
- no two test sources under tests/ share a file name (a reader looking
  for a behaviour's test finds one file).

Prints each copy and exits 1 if there is any.

usage: check_test_tree.py [ROOT]"""
import collections
import os
import re
import sys

HEADER = os.path.join("tests", "programs", "cuda_checks.h")
SOURCES = (".cpp", ".h", ".cu", ".c")
CHECK_FUNCTION = re.compile(r"^\s*(?:static\s+|inline\s+)*\w+\s+\w*check\w*\(\s*CUresult\b", re.M)


def macros(text):
    """Each #define with its continuation lines, and its line number."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\s*define\b", lines[i]):
            start, body = i + 1, [lines[i]]
            while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                body.append(lines[i])
            yield start, "\n".join(body)
        i += 1


def copies(root):
    found = []
    names = collections.defaultdict(list)
    for folder, dirs, files in os.walk(os.path.join(root, "tests")):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in sorted(files):
            path = os.path.relpath(os.path.join(folder, name), root)
            if name.startswith("test_") and name.endswith(SOURCES):
                names[name].append(path)
            if not name.endswith(SOURCES) or path == HEADER:
                continue
            text = open(os.path.join(folder, name), errors="replace").read()
            for line, body in macros(text):
                if (re.search(r"\b(CUDA_SUCCESS|cudaSuccess)\b", body)
                        and re.search(r"\b(f?printf|exit)\s*\(", body)):
                    found.append(f"{path}:{line}: a CUDA check macro of its own ({HEADER} has one)")
            for match in CHECK_FUNCTION.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path}:{line}: a CUDA check function of its own ({HEADER} has one)")
    for name, paths in sorted(names.items()):
        if len(paths) > 1:
            found.append(f"{name}: {len(paths)} test sources of this name: {', '.join(sorted(paths))}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = copies(root)
    for line in found:
        print(line)
    print(f"check_test_tree: {len(found)} copies")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
