#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""One way to open a file: every file the product (hook/, cache/, tools/)
opens, creates, names or renames goes through cache/base/safe_file.h,
which follows no symbolic link, never blocks, checks the file's type and
owner after the open and closes it on exec (issue 39). This fails on any
other open(2), openat(2), creat(2), fopen(3), freopen(3), iostream file,
mkstemp(3), rename(2), link(2) or mkdir(2) outside the layer and the short
allow-list below, each with its reason.

usage: check_file_access.py SOURCE_ROOT

Prints each call found as FILE:LINE: TEXT; exits 1 if any."""
import os
import re
import sys

PRODUCT = ("hook", "cache", "tools")
SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp")

# The layer itself.
LAYER = {"cache/base/safe_file.cpp"}
# Files the check does not read, each with its reason. Kept short: a new
# entry needs a reason a reviewer accepts.
ALLOWED = {
    # Benchmark programs, built for developers and never installed: they
    # write the scratch logs and the JSON results their runner names.
    "tools/bench/log_reader_bench.cpp": "benchmark scratch files",
    "tools/bench/main.cpp": "benchmark results file named by its runner",
}

# Calls that open, create, name or rename a file. `open(` alone is a call
# to the C library where nothing names an object or a type before it:
# `x.open(`, `x->open(`, `Class::open(` and a declaration `Status open(`
# are methods of gdrhook's own classes.
CALLS = re.compile(
    r"(?<![\w.>])(?:::)?(?:fopen|fopen64|freopen|fdopen_file|openat|openat2|open64|creat|creat64"
    r"|rename|renameat|renameat2|link|linkat|symlink|symlinkat|mkdir|mkdirat|mkstemp|mkostemp"
    r"|mkstemps|mkostemps|tmpfile|mkfifo|mknod)\s*\("
    r"|std::(?:basic_)?(?:i|o)?fstream\b|\b(?:i|o)?fstream\s+\w+\s*[({]|\b(?:i|o)fstream\s*\("
    r"|std::filesystem::(?:rename|copy_file|create_directory|create_directories|create_symlink)\b"
    r"|\bfs::(?:rename|copy_file|create_directory|create_directories|create_symlink)\b"
)
OPEN_WORD = re.compile(r"\bopen\s*\(")


def calls_plain_open(line):
    """Whether `line` calls open(2) itself: `::open(`, or `open(` after an
    operator, a bracket or `return`; not a method (`x.open(`, `p->open(`,
    `Class::open(`) nor a declaration (`Status open(`, `vector<T> open(`)."""
    for match in OPEN_WORD.finditer(line):
        before = line[: match.start()].rstrip()
        if before.endswith("::"):
            if not re.search(r"\w::$", before):
                return True
            continue
        if before.endswith((".", "->")):
            continue
        word = re.search(r"(\w+)$", before)
        if word and word.group(1) != "return":
            continue  # a declaration: a type before the name
        if before.endswith((">", "*", "&")) and not before.endswith(("&&", "->")):
            continue  # a declaration of a template, pointer or reference type
        return True
    return False


def strip_comments(text):
    """The code with comments and string literals blanked, line numbers
    kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(root):
    for top in PRODUCT:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root)
                if relative in LAYER or relative in ALLOWED:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    code = strip_comments(f.read())
                for number, line in enumerate(code.split("\n"), 1):
                    if CALLS.search(line) or calls_plain_open(line):
                        yield "%s:%d: %s" % (relative, number, line.strip())


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    found = list(findings(argv[0]))
    for line in found:
        print(line)
    if found:
        print("%d file access(es) outside cache/base/safe_file.h; use the layer" % len(found))
        return 1
    print("every file access of hook/, cache/, tools/ goes through cache/base/safe_file.h")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
