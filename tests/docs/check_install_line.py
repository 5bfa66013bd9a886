#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The README's set-up command installs what CI installs: every package
.ci/run's apt-get names is in the README's `apt-get install` line, and
the other way round, so that the README's test command finds on a fresh
Debian machine what it found in CI (the debug kernel's source, the
packaging tools, the arm64 libraries).

usage: check_install_line.py README CI_RUN

Prints the packages one names and the other does not; exits 1 if any."""
import re
import sys


def packages(text):
    """The words after `apt-get install` up to the end of the command,
    options and redirections left out."""
    names = set()
    for match in re.finditer(r"apt-get install((?:\\\n|[^\n&>])*)", text):
        for word in match.group(1).replace("\\\n", " ").split():
            if not word.startswith("-"):
                names.add(word)
    return names


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    readme, ci = (packages(open(path).read()) for path in argv)
    if not readme or not ci:
        print(f"no apt-get install line found in {argv[0] if not readme else argv[1]}")
        return 1
    for name in sorted(ci - readme):
        print(f"{argv[0]}: lacks {name}, which {argv[1]} installs")
    for name in sorted(readme - ci):
        print(f"{argv[1]}: lacks {name}, which {argv[0]} installs")
    return 1 if readme != ci else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
