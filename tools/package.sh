#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# tools/package.sh [OUT_DIR]: the Debian source package and binary
# packages, built from this tree with debhelper (packaging/debian/), then
# checked with lintian (the .dsc and the .changes):
#   gdrhook         the gdrhook command and the shim, libgdrhook.so
#   libgdrhook-dev  gdrhook.h and the pkg-config file
#   gdrhook-dkms    the module's source for DKMS, its udev rule, sysusers
#                   and modules-load files
# The version grows with each commit (packaging/version.sh). The tree is
# copied as it is into OUT_DIR/gdrhook-VERSION (packaging/stage-source.sh);
# the packages land in OUT_DIR (default: build-deb). Needs: debhelper
# dh-dkms dpkg-dev lintian help2man, and what the build needs (README,
# Install), CUDA headers among them (CUDA_INCLUDE, default
# /usr/local/cuda/include). ARCH=arm64 cross-builds the aarch64 packages
# (dpkg-buildpackage -a arm64, with the cross compiler and :arm64
# libraries of the tests' aarch64 leg and qemu-user-static; -d, since
# libsimdjson-dev cannot be installed for both architectures, as
# cross/aarch64-linux-gnu.ini says); no source package then.
# Exit status: dpkg-buildpackage's, else 1 when lintian reports an error or
# a warning.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/build-deb}" && cd "${1:-$ROOT/build-deb}" && pwd)
VERSION=$("$ROOT/packaging/stage-source.sh" "$OUT")
STAGE=$OUT/gdrhook-$VERSION
cp -a "$ROOT/packaging/debian" "$STAGE/debian"
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo " and local edits" || true)
# Maintainer and changelog signer: whoever builds (Debian's DEBFULLNAME and
# DEBEMAIL, else git's user.name and user.email); the project has no
# mailing address of its own. A machine with neither (a fresh one) signs as
# an address that cannot exist (.invalid, RFC 2606), which lintian takes,
# where root@ a one-label host name was two errors.
name=${DEBFULLNAME:-$(git -C "$ROOT" config user.name || echo "gdrhook packages")}
email=${DEBEMAIL:-$(git -C "$ROOT" config user.email || echo "packages@gdrhook.invalid")}
sed -i "s|@MAINTAINER@|$name <$email>|" "$STAGE/debian/control"
# The changelog's date is the commit's, not the build's: dpkg-buildpackage
# takes SOURCE_DATE_EPOCH from it, and every file's time in the packages
# from that, so that a package built twice from one commit is the same
# bytes. The architecture-independent gdrhook-dkms_VERSION_all.deb is
# built by both the amd64 and the arm64 build, and two different files of
# one name clash in a repository (tests/packaging/arm64_debs.sh compares them).
built_at=$(git -C "$ROOT" log -1 --format=%aD HEAD 2>/dev/null || date -R)
cat >"$STAGE/debian/changelog" <<CHANGELOG
gdrhook ($VERSION) unstable; urgency=medium

  * Built by tools/package.sh from commit $commit$dirty.

 -- $name <$email>  $built_at
CHANGELOG

# -nc: the build folder of the last run is kept (packaging/stage-source.sh);
# the source package first, while the copy holds nothing built but that
# folder (debian/source/options leaves it out).
buildpackage() {
	(cd "$STAGE" && dpkg-buildpackage -uc -us -nc "$@") >>"$OUT/build.log" 2>&1 || {
		tail -40 "$OUT/build.log"
		echo "package: dpkg-buildpackage $* failed ($OUT/build.log)" >&2
		exit 1
	}
}
: >"$OUT/build.log"
ARCH=${ARCH:-$(dpkg-architecture -qDEB_BUILD_ARCH)}
if [ "$ARCH" = "$(dpkg-architecture -qDEB_BUILD_ARCH)" ]; then
	buildpackage -S
	dsc=$OUT/gdrhook_$VERSION.dsc
	echo "package: lintian $dsc"
	lintian --fail-on error,warning "$dsc"
	buildpackage -b
else
	buildpackage -b -a "$ARCH" -d
fi
changes=$OUT/gdrhook_${VERSION}_$ARCH.changes
echo "package: built in $OUT:"
for deb in $(sed -n 's/^ [0-9a-f]\{32\} [0-9]* [a-z]* [a-z]* \(.*\.deb\)$/\1/p' "$changes"); do
	echo "  $deb $(stat -c %s "$OUT/$deb") bytes"
done
echo "package: lintian $changes"
lintian --fail-on error,warning "$changes"
