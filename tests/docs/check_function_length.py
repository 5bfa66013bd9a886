#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""No function of the tree is longer than 150 lines, its braces included:
a longer one holds several jobs that want names of their own. The bench's
main() (tools/bench/main.cpp), a list of runs, is the one exception.

A function here is what clang-format leaves in this tree's style (and the
kernel's, for kmod/): its body's opening brace alone on a line, at the
indent of the signature above it, which ends with a closing parenthesis
(maybe followed by const, noexcept, override, final, a trailing return
type or an initializer list's last member), and its closing brace at that
indent. Prints each function over the limit and exits 1 if there is any.

usage: check_function_length.py [ROOT]"""
import os
import re
import sys

LIMIT = 150
FOLDERS = ("hook", "cache", "tools", "kmod", "include", "tests")
SOURCES = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu")
EXEMPT = {("tools/bench/main.cpp", "main")}
SIGNATURE_END = re.compile(r"\)\s*(const|noexcept|override|final|->\s*[\w:<>,\s\*&]+|\s)*$|\)\s*\{?$|\}\s*$")
NAME = re.compile(r"([~\w:]+|operator\S+)\s*\(")


def function_name(lines, start):
    """The name before the first '(' of the signature ending at `start`."""
    for back in range(start, max(start - 8, -1), -1):
        text = lines[back]
        match = NAME.search(text)
        if match and not text.lstrip().startswith((":", ",")):
            return match.group(1)
    return "?"


def long_functions(path, relative):
    lines = open(path, errors="replace").read().splitlines()
    found = []
    i = 0
    while i < len(lines):
        brace = re.match(r"^(\s*)\{$", lines[i])
        if brace and i > 0 and lines[i - 1].strip() and SIGNATURE_END.search(lines[i - 1].rstrip()):
            indent = brace.group(1)
            end = i + 1
            while end < len(lines) and not re.match("^" + indent + r"\}[;,]?(\s*//.*)?$", lines[end]):
                end += 1
            length = end - i + 2  # the signature's last line to the closing brace
            name = function_name(lines, i - 1)
            if end < len(lines) and length > LIMIT and (relative, name) not in EXEMPT:
                found.append(f"{relative}:{i}: {name}() is {length} lines (at most {LIMIT})")
            i = end
        i += 1
    return found


def over_limit(root):
    found = []
    for top in FOLDERS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            for name in sorted(files):
                if name.endswith(SOURCES):
                    path = os.path.join(folder, name)
                    found += long_functions(path, os.path.relpath(path, root))
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = over_limit(root)
    for line in found:
        print(line)
    print(f"check_function_length: {len(found)} function(s) over {LIMIT} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
