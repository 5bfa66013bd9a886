#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# packaging/stage-source.sh OUT_DIR: copies this tree as it is (tracked
# files and untracked ones git does not ignore, so uncommitted edits are
# packaged too; no build folders) into OUT_DIR/gdrhook-VERSION, VERSION
# being meson's project version, and prints VERSION. Shared by
# tools/package.sh (Debian) and tools/package-rpm.sh. What a previous
# Debian build left in obj-* is kept, and the files keep their times, so
# that the next build recompiles only what changed.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
VERSION=$(meson introspect --projectinfo "$ROOT/meson.build" 2>/dev/null |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
STAGE=$OUT/gdrhook-$VERSION
mkdir -p "$STAGE"
find "$STAGE" -mindepth 1 -maxdepth 1 ! -name 'obj-*' -exec rm -rf {} +
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	xargs -0 cp --parents -P -p -t "$STAGE")
echo "$VERSION"
