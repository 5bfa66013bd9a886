#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""One configuration table: the README's table of GDRHOOK_* variables and
`gdrhook run`'s options must say what the shim's own table says.

usage: check_settings.py GDRHOOK README

`gdrhook doctor --settings` prints the shim's table (cache/base/config.cpp).
The README's table under "## Configure" must list the same variables in
the same order, each with the same values and default; every variable
`gdrhook run --help` names must be in the table. Prints each disagreement
and exits 1 if there is any."""
import os
import re
import subprocess
import sys

ROW = re.compile(r"^\| `(GDRHOOK_\w+)` \| (.*?) \| (.*?) \|")


def rows(text):
    return [ROW.match(line).groups() for line in text.splitlines() if ROW.match(line)]


def readme_table(path):
    with open(path) as f:
        text = f.read()
    start = text.index("## Configure")
    end = text.find("\n## ", start + 1)
    return rows(text[start:end if end > 0 else len(text)])


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    gdrhook, readme = argv
    env = {k: v for k, v in os.environ.items() if not k.startswith("GDRHOOK_")}
    listing = subprocess.run([gdrhook, "doctor", "--settings"], capture_output=True, text=True,
                             env=env)
    shim = rows(listing.stdout)
    problems = []
    if listing.returncode != 0 or not shim:
        problems.append(f"gdrhook doctor --settings: exit {listing.returncode}, "
                        f"{len(shim)} variables\n{listing.stdout}{listing.stderr}")
    documented = readme_table(readme)
    if [r[0] for r in documented] != [r[0] for r in shim]:
        problems.append(f"the README lists {[r[0] for r in documented]}, "
                        f"the shim's table {[r[0] for r in shim]}")
    for doc, own in zip(documented, shim):
        if doc[0] == own[0] and doc != own:
            problems.append(f"{doc[0]}: the README says values {doc[1]!r}, default {doc[2]!r}; "
                            f"the shim's table {own[1]!r}, {own[2]!r}")
    run_help = subprocess.run([gdrhook, "run", "--help"], capture_output=True, text=True).stdout
    known = {r[0] for r in shim}
    for name in sorted(set(re.findall(r"GDRHOOK_[A-Z_]+", run_help)) - {"GDRHOOK_LIBRARY"}):
        if name not in known:
            problems.append(f"gdrhook run --help names {name}, which the shim does not read")
    for p in problems:
        print(p)
    print(f"{len(shim)} variables, {len(problems)} disagreement(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
