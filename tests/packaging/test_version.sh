#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The packages' version grows with each commit (issue 41), as dpkg and rpm
# compare it, so that apt and dnf upgrade a node to the next build:
# packaging/version.sh in a repository of its own with twelve commits; each
# commit's version is newer than the one before (across 9 -> 10, where a
# text comparison would go backwards) and than the bare VERSION, by
# `dpkg --compare-versions` and by rpm's own rpm.vercmp. Outside git (a
# tarball) it is the VERSION file as it is.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-version-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_version: FAIL: $*" >&2; exit 1; }
command -v rpm >/dev/null || fail "rpm not found (apt-get install rpm)"

R=$WORK/repo
mkdir -p "$R/packaging"
cp "$HERE/../../packaging/version.sh" "$R/packaging/"
echo 0.1.0 >"$R/VERSION"
git -C "$R" init -q
newer() { # A B: B is newer than A, for dpkg and for rpm
	dpkg --compare-versions "$1" lt "$2" || fail "dpkg: $2 is not newer than $1"
	[ "$(rpm --eval "%{lua: print(rpm.vercmp('$2', '$1'))}")" = 1 ] || fail "rpm: $2 is not newer than $1"
}
previous=$(cat "$R/VERSION")
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	echo "$i" >"$R/file"
	git -C "$R" add -A
	git -C "$R" -c user.name=t -c user.email=t@t.invalid commit -q -m "commit $i"
	v=$("$R/packaging/version.sh")
	case $v in 0.1.0+git$i.*) ;; *) fail "commit $i has version $v" ;; esac
	newer "$previous" "$v"
	previous=$v
done
[ "$("$R/packaging/version.sh" HEAD~3)" = "0.1.0+git9.$(git -C "$R" rev-parse --short=7 HEAD~3)" ] ||
	fail "the version of an older commit"
echo "  dpkg and rpm: 0.1.0 < ... < $("$R/packaging/version.sh" HEAD~3) < ... < $previous"

# After a release (VERSION bumped), an older commit keeps its own base:
# its release tarball (packaging/release-tarball.sh COMMIT, the recipes'
# checksum) is the same bytes as before the bump.
echo 0.2.0 >"$R/VERSION"
git -C "$R" -c user.name=t -c user.email=t@t.invalid commit -q -am "release 0.2.0"
[ "$("$R/packaging/version.sh" HEAD~1)" = "$previous" ] ||
	fail "after the bump, HEAD~1 is $("$R/packaging/version.sh" HEAD~1), not $previous"
case $("$R/packaging/version.sh") in 0.2.0+git13.*) ;; *) fail "the bump's version is $("$R/packaging/version.sh")" ;; esac

# A tarball: no git; its VERSION as packaging/release-tarball.sh writes it.
rm -rf "$R/.git"
echo 0.1.0 >"$R/VERSION"
[ "$("$R/packaging/version.sh")" = 0.1.0 ] || fail "outside git: not the VERSION file"
echo "$previous" >"$R/VERSION"
[ "$("$R/packaging/version.sh")" = "$previous" ] || fail "a release tarball's version is not its VERSION"
echo "test_version: each commit's version newer than the last, for dpkg and rpm"
