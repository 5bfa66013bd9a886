#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Docs that stay true: every file, folder and test a document cites must
exist.

usage: check_citations.py ROOT DOC...

In each DOC, a code span that names a path of the repository (it contains
a "/" and starts with one of the top-level folders or with a hidden
folder, or is a top-level file) must exist; one that names a bare source file (`unpinner.h`) must
exist somewhere in the tree. A quoted phrase ("...") in a paragraph or
list item that cites a test file (tests/.../test_*.cpp) is a test's
name, or a part of one where the doc elides the rest with "...": some
TEST_CASE or SECTION of a test file cited in the same item must contain
each part (or the phrase is a message the test file holds, or a heading
of the document). A function named `like_this()` or `Class::like_this()`
must occur in the tree's sources. Prints each dangling citation and
exits 1 if there is any."""
import os
import re
import sys

# Every folder at the top of the tree (main() lists them): .ci/, cross/,
# packaging/ as much as hook/ or tests/.
TOP_FOLDERS = ()
SOURCE_SUFFIXES = (".h", ".cpp", ".c", ".py", ".sh", ".S", ".md", ".build")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
QUOTED = re.compile(r'"([^"\n]{6,})"')
TEST_FILE = re.compile(r"tests/[\w/]+/test_\w+\.cpp")
TEST_FOLDER = re.compile(r"`(tests/\w+)/?`")
# A test's name: the string literals, perhaps several in a row, that
# open a TEST_CASE or SECTION.
TEST_NAME = re.compile(r'(?:TEST_CASE|SECTION)\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
FUNCTION = re.compile(r"^(?:(\w+)::)?(\w+)\(\)$")
# Headers of other projects a document may name.
EXTERNAL = {"cuda.h", "cudaTypedefs.h", "nv-p2p.h", "ucm.h", "dma-buf.h", "mmu_notifier.h"}


def tree_files(root):
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        found.update(files)
    return found


def top_folders(root):
    """The tree's top folders, "name/": the hidden ones but .ci, and
    build folders, left out."""
    return tuple(sorted(f"{d}/" for d in os.listdir(root)
                        if os.path.isdir(os.path.join(root, d))
                        and (d == ".ci" or not d.startswith((".", "build")))))


def paragraphs(text):
    """List items and paragraphs, each with the line it starts on."""
    start, lines = 1, []
    for number, line in enumerate(text.splitlines(), 1):
        new_item = line.startswith(("- ", "* ", "#")) or re.match(r"\d+\. ", line)
        if (not line.strip() or new_item) and lines:
            yield start, " ".join(lines)
            lines = []
        if line.strip():
            if not lines:
                start = number
            lines.append(line.strip())
    if lines:
        yield start, " ".join(lines)


def cited_path(span):
    span = span.strip().rstrip(".,:;")
    if " " in span or span.startswith(("/", "$", "-")) or "*" in span or "%" in span:
        return None
    span = span.split(":")[0]  # a path with a line or function after it
    if span.startswith(TOP_FOLDERS) or span in ("meson.build", "README.md", "meson_options.txt"):
        return span
    # A hidden folder (`.carry/gpu`) is a path too: one the tree lacks is
    # a file the reader cannot find.
    if re.match(r"\.[\w-]+/", span):
        return span
    return None


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def test_texts(root, files, cache):
    """Each cited test file's test names, and its whole text (a quoted
    message the test looks for counts too)."""
    names, texts = [], []
    for path in files:
        if path not in cache:
            text = read(os.path.join(root, path))
            cache[path] = ([" ".join("".join(LITERAL.findall(m)).split()).replace('\\"', '"')
                            for m in TEST_NAME.findall(text)], text)
        names += cache[path][0]
        texts.append(cache[path][1])
    return names, texts


def sources(root):
    """The text of every source and build file of the tree, for the
    functions a document names."""
    chunks = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in files:
            if name.endswith((".h", ".cpp", ".c", ".S", ".py", ".sh", ".build")) or name in (
                    "Makefile", "Kbuild"):
                chunks.append(read(os.path.join(folder, name)))
    return "\n".join(chunks)


def exists(root, doc, path):
    """A path from the top or from the document's folder; a program by its
    source (`tests/programs/endings`) or by its meson target."""
    for base in (root, os.path.join(root, os.path.dirname(doc))):
        full = os.path.join(base, path)
        if os.path.exists(full) or any(os.path.exists(full + s) for s in (".cpp", ".c", ".py")):
            return True
        build = read(os.path.join(os.path.dirname(full), "meson.build"))
        if f"'{os.path.basename(path)}'" in build:
            return True
    return False


def check(root, doc, tree, names_cache):
    files, code = tree
    problems = []
    text = read(os.path.join(root, doc))
    headings = {h.strip() for h in re.findall(r"^#+ (?:\d+\. )?(.*)$", text, re.M)}
    for line, item in paragraphs(text):
        for span in CODE_SPAN.findall(item):
            path = cited_path(span)
            function = FUNCTION.match(span)
            if path and not exists(root, doc, path):
                problems.append(f"{doc}:{line}: `{span}` does not exist")
            elif (not path and "/" not in span and " " not in span and
                  span.endswith(SOURCE_SUFFIXES) and span not in files and span not in EXTERNAL
                  and not re.search(rf"\b{re.escape(span)}\b", code)):
                problems.append(f"{doc}:{line}: no file `{span}` in the tree")
            elif function and not all(re.search(rf"\b{n}\b", code) for n in function.groups() if n):
                problems.append(f"{doc}:{line}: no function `{span}` in the tree")
        tests = TEST_FILE.findall(item)
        for folder in TEST_FOLDER.findall(item):  # a suite cited by its folder
            if os.path.isdir(os.path.join(root, folder)):
                tests += sorted(os.path.join(folder, n) for n in os.listdir(os.path.join(root, folder))
                                if n.startswith("test_") and n.endswith(".cpp"))
        if not tests:
            continue
        names, texts = test_texts(root, tests, names_cache)
        for quoted in QUOTED.findall(item):
            quoted = " ".join(quoted.split())
            parts = [p.strip(" ,;") for p in quoted.split("...") if p.strip(" ,;")]
            if (parts and not any(all(p in name for p in parts) for name in names)
                    and not any(quoted in t for t in texts) and quoted not in headings):
                problems.append(f"{doc}:{line}: no test named \"{quoted}\" in {', '.join(tests)}")
    return problems


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, docs = argv[0], argv[1:]
    global TOP_FOLDERS
    TOP_FOLDERS = top_folders(root)
    tree = (tree_files(root), sources(root))
    cache = {}
    problems = [p for doc in docs for p in check(root, doc, tree, cache)]
    for p in problems:
        print(p)
    print(f"{len(docs)} document(s), {len(problems)} dangling citation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
