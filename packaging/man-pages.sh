#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# packaging/man-pages.sh GDRHOOK OUT_DIR VERSION: a manual page for the
# command and one for each of its subcommands, at any depth (gdrhook.1,
# gdrhook-run.1, gdrhook-log.1, gdrhook-log-check.1, ...), written by
# help2man from each one's own --help, so that they say what the program
# says. The subcommands are the "Subcommands:" list of their parent's
# help (CLI11's layout). EXEC_WRAPPER (e.g. qemu-aarch64-static) runs a
# GDRHOOK of another architecture. Prints the pages it wrote.
set -eu
GDRHOOK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
VERSION=$3
mkdir -p "$OUT/bin"
subcommands() { # words...: the subcommands `gdrhook words... --help` lists
	${EXEC_WRAPPER:-} "$GDRHOOK" "$@" --help |
		sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p'
}
page() { # words...: the page of `gdrhook words...`
	name=$(echo "gdrhook $*" | sed 's/ *$//; s/ /-/g')
	# help2man runs NAME --help: a program of that name that is the
	# subcommand; its first help line is the page's one-line description.
	printf '#!/bin/sh\nexec %s "%s" %s "$@"\n' "${EXEC_WRAPPER:-}" "$GDRHOOK" "$*" >"$OUT/bin/$name"
	chmod 755 "$OUT/bin/$name"
	what=$("$OUT/bin/$name" --help | head -n1 | sed 's/^gdrhook: //')
	help2man --no-info --no-discard-stderr --version-string="$VERSION" \
		--name="$what" --output="$OUT/$name.1" "$OUT/bin/$name"
	echo "$OUT/$name.1"
	for sub in $(subcommands "$@"); do
		page "$@" "$sub"
	done
}
page
rm -rf "$OUT/bin"
