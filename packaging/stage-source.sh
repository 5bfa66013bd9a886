#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# packaging/stage-source.sh OUT_DIR: copies this tree as it is (tracked
# files and untracked ones git does not ignore, so uncommitted edits are
# packaged too; no build folders) into OUT_DIR/gdrhook-VERSION, VERSION
# being this build's version (packaging/version.sh), which it also writes
# into the copy's VERSION file (meson's project version there), and prints
# VERSION. Shared by tools/package.sh (Debian) and tools/package-rpm.sh.
# The copy of an earlier version is moved to the new name, and what its
# Debian build left in obj-* is kept, and the files keep their times, so
# that the next build recompiles only what changed.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
VERSION=$("$ROOT/packaging/version.sh")
STAGE=$OUT/gdrhook-$VERSION
mkdir -p "$OUT"
if [ ! -d "$STAGE" ]; then
	for old in "$OUT"/gdrhook-*/; do
		[ -d "$old" ] && mv "$old" "$STAGE" && break
	done
fi
mkdir -p "$STAGE"
find "$STAGE" -mindepth 1 -maxdepth 1 ! -name 'obj-*' -exec rm -rf {} +
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	xargs -0 cp --parents -P -p -t "$STAGE")
echo "$VERSION" >"$STAGE/VERSION"
echo "$VERSION"
