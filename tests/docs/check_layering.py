#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""cache/'s folders and tools/cli/'s rooms are layered as docs/design.md
lists them ("The folders of cache/", "The rooms of tools/cli/": each uses
only those listed before it). Reads each table's order and fails on any
#include in cache/ or tools/cli/ of a folder listed after the including
file's own, naming the file, the line and both folders. Across the parts
(the table of "The parts"), cache/ includes neither hook/ nor tools/, and
tools/slurm/ includes only the rooms of tools/cli/ that its row names
("It includes `tools/cli/job/` ... nothing else of the tool").

usage: check_layering.py [ROOT]"""
import os
import re
import sys


# Each layered tree: its folder in the repository, the heading of its table
# in docs/design.md, and how an include names one of its folders (cache/'s
# from the root; tools/cli/'s rooms from tools/cli, or from the root).
TREES = [
    ("cache", "### The folders of `cache/`", re.compile(r'\s*#\s*include\s+"cache/([a-z_]+)/')),
    ("tools/cli", "### The rooms of `tools/cli/`",
     re.compile(r'\s*#\s*include\s+"(?:tools/cli/)?([a-z_]+)/')),
]


def folder_order(design, tree, heading):
    text = open(design).read()
    if heading not in text:
        return []
    section = text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(r"^\| `" + re.escape(tree) + r"/([a-z_]+)/` \|", section, re.M)


def tree_violations(root, tree, heading, include):
    order = folder_order(os.path.join(root, "docs", "design.md"), tree, heading)
    if len(order) < 2:
        return [f"docs/design.md: no folder order found in \"{heading.lstrip('# ')}\" ({order})"]
    rank = {name: i for i, name in enumerate(order)}
    found = []
    for folder in sorted(os.listdir(os.path.join(root, tree))):
        path = os.path.join(root, tree, folder)
        if not os.path.isdir(path):
            continue
        if folder not in rank:
            found.append(f"{tree}/{folder}/: not in docs/design.md's folder table")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".h", ".cpp")):
                continue
            for number, line in enumerate(open(os.path.join(path, name)), 1):
                used = include.match(line)
                if not used or (tree != "cache" and used.group(1) in ("cache", "kmod")):
                    continue
                where = f"{tree}/{folder}/{name}:{number}"
                if used.group(1) in rank and rank[used.group(1)] > rank[folder]:
                    found.append(f"{where}: includes {tree}/{used.group(1)}/, "
                                 f"listed after {tree}/{folder}/ in docs/design.md")
                elif used.group(1) not in rank:
                    found.append(f"{where}: {tree}/{used.group(1)}/ "
                                 "is not in docs/design.md's folder table")
    return found


def sources(root, tree):
    for folder, dirs, files in os.walk(os.path.join(root, tree)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in sorted(files):
            if name.endswith((".h", ".cpp", ".c")):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, root), open(path, errors="replace").read().splitlines()


def parts_violations(root):
    """cache/ below hook/ and tools/; tools/slurm/ on the rooms its row names."""
    text = open(os.path.join(root, "docs", "design.md")).read()
    row = re.search(r"^\| `tools/slurm/` \|(.*)$", text, re.M)
    allowed = set(re.findall(r"`tools/cli/([a-z_]+)/`", row.group(1))) if row else set()
    if not allowed:
        return ["docs/design.md: no rooms of tools/cli/ named in the row of tools/slurm/"]
    found = []
    include = re.compile(r'\s*#\s*include\s+"([a-z_]+)/')
    for relative, lines in sources(root, "cache"):
        for number, line in enumerate(lines, 1):
            used = include.match(line)
            if used and used.group(1) in ("hook", "tools"):
                found.append(f"{relative}:{number}: includes {used.group(1)}/, which sits above cache/")
    for relative, lines in sources(root, "tools/slurm"):
        for number, line in enumerate(lines, 1):
            used = re.match(r'\s*#\s*include\s+"tools/cli/([a-z_]+)/', line)
            if used and used.group(1) not in allowed:
                found.append(f"{relative}:{number}: includes tools/cli/{used.group(1)}/, "
                             "which docs/design.md's row of tools/slurm/ does not name")
    return found


def violations(root):
    found = parts_violations(root)
    for tree, heading, include in TREES:
        found += tree_violations(root, tree, heading, include)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = violations(root)
    for line in found:
        print(line)
    print(f"check_layering: {len(found)} include(s) against the order of cache/'s folders and tools/cli/'s rooms")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
