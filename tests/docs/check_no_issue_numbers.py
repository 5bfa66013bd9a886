#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""A product source's comments say why in words that outlive the issue
tracker: no source file of the shim, the module, the tool or the public
header (cache/, hook/, kmod/, tools/, include/) cites an issue number.
Prints each citation with its file and line; exits 1 on any.

usage: check_no_issue_numbers.py ROOT"""
import os
import re
import sys

FOLDERS = ("cache", "hook", "kmod", "tools", "include")
SOURCES = (".h", ".hpp", ".c", ".cpp", ".sh", ".py", ".build")
CITATION = re.compile(r"\bissues? #?[0-9]+|\bissue-[0-9]+", re.I)


def citations(root):
    found = []
    for folder in FOLDERS:
        for here, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(here, name)
                for number, line in enumerate(open(path, errors="replace"), 1):
                    if CITATION.search(line):
                        found.append(f"{os.path.relpath(path, root)}:{number}: {line.strip()}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = citations(root)
    for line in found:
        print(line)
    print(f"check_no_issue_numbers: {len(found)} citation(s) of an issue in product sources")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
