#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cache/'s folders are layered as docs/design.md lists them ("The folders
of cache/": each folder uses only the folders listed before it). Reads that
table's order and fails on any #include in cache/ of a folder listed after
the including file's own, naming the file, the line and both folders.

usage: check_layering.py [ROOT]"""
import os
import re
import sys


def folder_order(design):
    text = open(design).read()
    section = text.split("### The folders of `cache/`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `cache/([a-z_]+)/` \|", section, re.M)


def violations(root):
    order = folder_order(os.path.join(root, "docs", "design.md"))
    if len(order) < 2:
        return [f"docs/design.md: no folder order found in \"The folders of cache/\" ({order})"]
    rank = {name: i for i, name in enumerate(order)}
    found = []
    for folder in sorted(os.listdir(os.path.join(root, "cache"))):
        path = os.path.join(root, "cache", folder)
        if not os.path.isdir(path):
            continue
        if folder not in rank:
            found.append(f"cache/{folder}/: not in docs/design.md's folder table")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".h", ".cpp")):
                continue
            for number, line in enumerate(open(os.path.join(path, name)), 1):
                used = re.match(r'\s*#\s*include\s+"cache/([a-z_]+)/', line)
                if used and used.group(1) in rank and rank[used.group(1)] > rank[folder]:
                    found.append(f"cache/{folder}/{name}:{number}: includes cache/{used.group(1)}/, "
                                 f"listed after cache/{folder}/ in docs/design.md")
                elif used and used.group(1) not in rank:
                    found.append(f"cache/{folder}/{name}:{number}: cache/{used.group(1)}/ "
                                 "is not in docs/design.md's folder table")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = violations(root)
    for line in found:
        print(line)
    print(f"check_layering: {len(found)} include(s) against the order of cache/'s folders")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
