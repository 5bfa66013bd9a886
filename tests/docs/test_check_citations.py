#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""check_citations.py misses no folder: in a copy of the tree's top
folders (empty), a document citing a missing file in each of them, or in
a hidden folder the tree lacks (a copy a session kept outside it), gets
each one reported, and a citation of a file that exists is not.

usage: test_check_citations.py ROOT"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    root = argv[0]
    # Listed here on their own, not by the checker's function under test.
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                     and (d == ".ci" or not d.startswith((".", "build"))))
    cited = folders + [".carry"] # absent from the copy: outside the tree
    with tempfile.TemporaryDirectory() as tree:
        for d in folders:
            os.mkdir(os.path.join(tree, d))
        open(os.path.join(tree, folders[0], "here.txt"), "w").close()
        with open(os.path.join(tree, "doc.md"), "w") as doc:
            doc.write(f"`{folders[0]}/here.txt` exists.\n\n")
            for d in cited:
                doc.write(f"- `{d}/missing.txt`\n")
        result = subprocess.run([sys.executable, os.path.join(HERE, "check_citations.py"), tree,
                                 "doc.md"], capture_output=True, text=True)
    missed = [d for d in cited if f"`{d}/missing.txt` does not exist" not in result.stdout]
    wrong = "here.txt" in result.stdout
    print(result.stdout, end="")
    for d in missed:
        print(f"test_check_citations: a missing file in {d}/ was not reported")
    if wrong:
        print("test_check_citations: a file that exists was reported")
    ok = result.returncode == 1 and not missed and not wrong
    print(f"test_check_citations: {len(folders)} top folders: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
