#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The log's names, declared once in cache/events/log_schema.h, are the
ones docs/log-format.md documents (issue 40): every event kind (`ev`),
memory kind (`kind`), `via` value and key the header declares is in the
document, and every one the document lists is in the header.

Where the document lists them: the keys, in the first column of its
`| key | type | always | meaning |` tables; the event kinds, in the `ev`
row of the first such table and in the first column of the "When" table;
the memory kinds, in the first column of the "Memory kinds" table; the
`via` values, in the `via` row. The keys inside a `process` line's objects
(log_object_key) need only be named somewhere in the document.

usage: check_log_schema.py HEADER DOCUMENT

Prints each name one side has and the other lacks; exits 1 if any."""
import re
import sys


def without_comments(source):
    return re.sub(r"//[^\n]*", "", source)


def literals(text):
    return [name for name in re.findall(r'"([^"\\]*)"', text) if name]


def header_names(source):
    """The names of the header's tables and key namespaces."""
    source = without_comments(source)

    def table(name):
        match = re.search(name + r"\[\]\s*=\s*\{(.*?)\};", source, re.S)
        if not match:
            raise SystemExit(f"no table {name} in the header")
        return set(literals(match.group(1)))

    def namespace(name):
        match = re.search(r"namespace " + name + r" \{(.*?)^\}", source, re.S | re.M)
        if not match:
            raise SystemExit(f"no namespace {name} in the header")
        return set(literals(match.group(1)))

    return {
        "event kind": table("event_kind_names"),
        "memory kind": table("memory_kind_names"),
        "via value": table("via_names"),
        "key": namespace("log_key"),
        "object key": namespace("log_object_key"),
    }


def tables(document):
    """Each Markdown table: its header's cells, then its rows' cells."""
    found, current = [], None
    for line in document.splitlines():
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if current is None:
                current = (cells, [])
                found.append(current)
            elif not all(set(cell) <= set("-:") for cell in cells):
                current[1].append(cells)
        else:
            current = None
    return found


def quoted(cell):
    return re.findall(r"`([^`]+)`", cell)


def document_names(document):
    key_tables = [rows for head, rows in tables(document) if head[:2] == ["key", "type"]]
    if not key_tables:
        raise SystemExit("no `| key | type |` table in the document")
    keys = {name for rows in key_tables for row in rows for name in quoted(row[0])}
    row_of = {quoted(row[0])[0]: row for row in key_tables[0] if quoted(row[0])}
    when = [rows for head, rows in tables(document) if head == ["`ev`", "`ts_ns` is"]]
    kinds = [rows for head, rows in tables(document) if head == ["`kind`", "the memory"]]
    if "ev" not in row_of or "via" not in row_of or not when or not kinds:
        raise SystemExit("the document lacks the `ev` or `via` row, the When or the Memory kinds table")
    return {
        "event kind": set(quoted(row_of["ev"][-1])),
        "event kind (When table)": {name for row in when[0] for name in quoted(row[0])},
        "memory kind": {name for row in kinds[0] for name in quoted(row[0])},
        "via value": set(quoted(row_of["via"][-1])),
        "key": keys,
    }


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    header_path, document_path = argv
    declared = header_names(open(header_path).read())
    document = open(document_path).read()
    listed = document_names(document)
    problems = []
    for what, names in listed.items():
        in_header = declared[what.split(" (")[0]]
        for name in sorted(in_header - names):
            problems.append(f"{document_path}: the {what} `{name}` of {header_path} is not documented")
        for name in sorted(names - in_header):
            problems.append(f"{header_path}: lacks the {what} `{name}` that {document_path} lists")
    documented = set(quoted(re.sub(r"```.*?```", "", document, flags=re.S)))
    for name in sorted(declared["object key"] - documented):
        problems.append(f"{document_path}: the object key `{name}` of {header_path} is not documented")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
