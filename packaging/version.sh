#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# packaging/version.sh [COMMIT]: the version of the packages built from
# COMMIT (default HEAD) of this repository, printed on one line:
#   BASE+gitN.HASH
# BASE is the VERSION file (the last release's number; a COMMIT named: its
# own), N the number of commits COMMIT has (git rev-list --count), HASH
# its short hash. N grows
# with each commit, so apt and dnf upgrade a node to the next build: dpkg
# and rpm both compare "+gitN" after BASE as newer than BASE and N
# numerically (tests/packaging/test_version.sh shows it for two commits).
# Outside a git checkout (a tarball of packaging/release-tarball.sh,
# whose VERSION file holds the full version already) it prints VERSION as
# it is. The packaging scripts write the result into the copy of the tree
# they build (packaging/stage-source.sh), where meson.build reads it as the
# project version: `gdrhook --version` of a package names its build,
# while a developer's build folder says BASE and is not reconfigured by
# every commit.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(cat "$ROOT/VERSION")
case $BASE in
*+git*) echo "$BASE"; exit 0 ;; # stamped already (a release tarball)
esac
if ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	echo "$BASE"
	exit 0
fi
COMMIT=${1:-HEAD}
# A shallow clone counts only the commits it has: its N would go
# backwards; say so rather than build a version that apt would not take.
if [ "$(git -C "$ROOT" rev-parse --is-shallow-repository)" = true ]; then
	echo "version.sh: $ROOT is a shallow clone: the commit count is wrong (git fetch --unshallow)" >&2
	exit 1
fi
# A commit named is numbered from its own VERSION file, so that its release
# tarball stays the same bytes after a later release bumps VERSION; HEAD's
# is the tree's, an edit not yet committed included.
[ -z "${1:-}" ] || BASE=$(git -C "$ROOT" show "$COMMIT:VERSION" 2>/dev/null || echo "$BASE")
N=$(git -C "$ROOT" rev-list --count "$COMMIT")
HASH=$(git -C "$ROOT" rev-parse --short=7 "$COMMIT")
echo "$BASE+git$N.$HASH"
