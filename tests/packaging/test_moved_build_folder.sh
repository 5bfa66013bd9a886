#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tools/package.sh after a commit: packaging/stage-source.sh moves the
# staged copy, build folder and all, to the new version's name, and meson's
# folder keeps the old absolute paths, where `meson configure` failed (and
# regenerated the old folder where it still existed). packaging/debian/rules'
# configure step is run here as dpkg-buildpackage runs it, with meson and
# dh_auto_configure answered by stand-ins that log their calls: a folder
# meson made in this copy is configured again (the next build rebuilds
# only what changed); one made elsewhere is removed and set up afresh.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-moved-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_moved_build_folder: FAIL: $*" >&2; sed 's/^/  call: /' "$WORK/calls" >&2; exit 1; }

mkdir -p "$WORK/bin" "$WORK/src"
cp -a "$HERE/../../packaging/debian" "$WORK/src/debian"
printf 'gdrhook (0.1.0+git2.abcdef0) unstable; urgency=medium\n\n  * test\n\n -- test <test@gdrhook.invalid>  %s\n' \
	"$(date -R)" >"$WORK/src/debian/changelog"
for tool in meson dh_auto_configure; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$WORK" >"$WORK/bin/$tool"
	chmod +x "$WORK/bin/$tool"
done
obj=obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)
configure() { # build.ninja's regenerate line's folder: what meson recorded
	: >"$WORK/calls"
	mkdir -p "$WORK/src/$obj"
	echo "  command = /usr/bin/meson --internal regenerate $(dirname "$1") $1" >"$WORK/src/$obj/build.ninja"
	(cd "$WORK/src" && PATH="$WORK/bin:$PATH" make -s -f debian/rules override_dh_auto_configure) >/dev/null
}

configure "$WORK/src/$obj"
grep -q "^meson configure $obj " "$WORK/calls" && ! grep -q dh_auto_configure "$WORK/calls" ||
	fail "this copy's build folder is not configured again in place"

configure "$WORK/gdrhook-0.1.0+git1.1234567/$obj"
grep -q "^meson configure" "$WORK/calls" && fail "a build folder made in another copy is configured in place"
grep -q "^dh_auto_configure -- " "$WORK/calls" || fail "no fresh setup for a build folder made elsewhere"
[ ! -e "$WORK/src/$obj/build.ninja" ] || fail "the moved build folder is kept"
echo "test_moved_build_folder: this copy's build folder reconfigured; one made elsewhere set up afresh"
