#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# packaging/release-tarball.sh [COMMIT] [OUT_DIR]: the source tarball of
# COMMIT (default HEAD), OUT_DIR/gdrhook-VERSION.tar.gz (default OUT_DIR:
# build-release), VERSION being COMMIT's (packaging/version.sh), which the
# tarball's VERSION file holds, so that a build from it without git has
# the same version. It is git archive's tree, made reproducible: files
# sorted, owned by 0:0, dated at the commit, gzip without a name or time,
# so that anyone who makes it again from COMMIT gets the same bytes and
# the sha256 printed here (the Spack recipe's and the easyconfig's
# checksum). Prints the tarball's path and sha256. The modes are git's
# two, 644 and 755: tar applies the umask when it extracts as a user
# (and, told so here, as root too), so the modes are set again as the
# tarball is made, or a user with umask 022 would get other bytes than
# root (tests/packaging/test_recipes.py makes it under two umasks).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMMIT=${1:-HEAD}
OUT=$(mkdir -p "${2:-$ROOT/build-release}" && cd "${2:-$ROOT/build-release}" && pwd)
VERSION=$("$ROOT/packaging/version.sh" "$COMMIT")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-release-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git -C "$ROOT" archive --format=tar --prefix="gdrhook-$VERSION/" "$COMMIT" | tar -x --no-same-permissions -C "$WORK"
echo "$VERSION" >"$WORK/gdrhook-$VERSION/VERSION"
when=$(git -C "$ROOT" log -1 --format=%ct "$COMMIT")
tarball=$OUT/gdrhook-$VERSION.tar.gz
tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$when" \
	--mode='u=rwX,go=rX' --format=gnu -cf - "gdrhook-$VERSION" | gzip -9n >"$tarball"
echo "$tarball $(sha256sum "$tarball" | cut -d' ' -f1)"
