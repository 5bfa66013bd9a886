#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""docs/design.md keeps up with the code's rooms and rules:

- every folder of tools/cli/ has its row in "The rooms of `tools/cli/`"
  (`| \\`tools/cli/NAME/\\` |`), and every row there names a folder that
  exists;
- every rule the code exports, a function named `judge_*` or `*_rule`
  declared in a header or defined outside a `.cpp`'s unnamed namespace
  (a helper inside one is part of the rule that calls it), is named in
  the table of "Where each rule lives".

Prints each one missing and exits 1 if any is.

usage: check_design_rows.py [ROOT]"""
import os
import re
import sys

PRODUCT = ("hook", "cache", "tools", "kmod", "include")
RULE = re.compile(r"^[A-Za-z_][\w:<>,\s\*&]*?\b(judge_\w+|\w+_rule)\s*\(")


def section(text, heading):
    if heading not in text:
        return None
    return text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def exported_rules(root):
    """(name, file) of each rule function outside an unnamed namespace."""
    found = set()
    for top in PRODUCT:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp", ".c")):
                    continue
                path = os.path.join(folder, name)
                local = False
                for line in open(path, errors="replace"):
                    if re.match(r"^namespace \{", line):
                        local = True
                    elif local and re.match(r"^\} // namespace$", line.rstrip()):
                        local = False
                    match = RULE.match(line)
                    if match and not local and not line.startswith("static "):
                        found.add((match.group(1), os.path.relpath(path, root)))
    return sorted(found)


def missing(root):
    text = open(os.path.join(root, "docs", "design.md")).read()
    problems = []
    rooms_text = section(text, "### The rooms of `tools/cli/`")
    if rooms_text is None:
        problems.append("docs/design.md: no section \"The rooms of `tools/cli/`\"")
        rooms_text = ""
    rows = set(re.findall(r"^\| `tools/cli/([a-z_]+)/` \|", rooms_text, re.M))
    cli = os.path.join(root, "tools", "cli")
    folders = {n for n in os.listdir(cli) if os.path.isdir(os.path.join(cli, n))}
    for room in sorted(folders - rows):
        problems.append(f"tools/cli/{room}/: no row in docs/design.md's rooms of tools/cli/")
    for room in sorted(rows - folders):
        problems.append(f"docs/design.md: a row for tools/cli/{room}/, which does not exist")
    rules_text = section(text, "## Where each rule lives")
    if rules_text is None:
        problems.append("docs/design.md: no section \"Where each rule lives\"")
        rules_text = ""
    table = "\n".join(l for l in rules_text.splitlines() if l.startswith("|"))
    for name, path in exported_rules(root):
        if not re.search(r"`" + re.escape(name) + r"\(", table):
            problems.append(f"{path}: {name}() has no row in docs/design.md's "
                            "\"Where each rule lives\"")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = missing(root)
    for line in problems:
        print(line)
    print(f"check_design_rows: {len(problems)} room(s) or rule(s) missing from docs/design.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
