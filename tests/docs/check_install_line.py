#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The README's two commands are what they say and what CI runs:
 - its first command (`apt-get install ... && meson setup build && ninja
   -C build && tools/demo.sh build`) installs exactly
   tests/packages/build.txt, what building and running the demo needs;
 - its test command (the one that runs tests/run_all.sh) is what .ci/run
   runs, word for word, and .ci/run installs nothing of its own: the test
   command brings in what the tests need (tests/install_packages.sh).

usage: check_install_line.py README CI_RUN BUILD_PACKAGES

Prints each difference; exits 1 if any."""
import re
import sys


def listed(text):
    """The words of a package list, comments left out."""
    return {w for line in text.splitlines() for w in line.split("#")[0].split()}


def installed(text):
    """The words after `apt-get install` up to the end of the command,
    options and redirections left out."""
    names = set()
    for match in re.finditer(r"apt-get install((?:\\\n|[^\n&>])*)", text):
        for word in match.group(1).replace("\\\n", " ").split():
            if not word.startswith("-"):
                names.add(word)
    return names


def readme_test_command(text):
    """The README's code block line that runs tests/run_all.sh."""
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if "tests/run_all.sh" in line:
                return line.strip()
    return None


def ci_commands(text):
    """.ci/run's commands: its lines but comments, blanks, `set` and `cd`."""
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    readme, ci, build = (open(path).read() for path in argv)
    problems = []
    first = readme[:readme.find("tests/run_all.sh")]
    wanted, named = listed(build), installed(first)
    if not named:
        problems.append(f"{argv[0]}: no apt-get install line before the test command")
    for name in sorted(wanted - named):
        problems.append(f"{argv[0]}: its first command lacks {name} ({argv[2]})")
    for name in sorted(named - wanted):
        problems.append(f"{argv[0]}: its first command installs {name}, not in {argv[2]}")
    test = readme_test_command(readme)
    commands = ci_commands(ci)
    if not test:
        problems.append(f"{argv[0]}: no code block runs tests/run_all.sh")
    elif commands != [test]:
        problems.append(f"{argv[1]} runs {commands}, the README's test command is [{test!r}]")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
