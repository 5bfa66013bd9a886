#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# tools/package-rpm.sh [OUT_DIR]: the RPMs of packaging/rpm/gdrhook.spec
# (gdrhook, gdrhook-devel, gdrhook-slurm, gdrhook-dkms) and the source RPM,
# built with rpmbuild from this tree (packaging/stage-source.sh) into
# OUT_DIR (default: build-rpm). ARCH=aarch64 cross-builds the aarch64 RPMs
# (rpmbuild --target aarch64, no source RPM) with Debian's cross compiler
# and :arm64 libraries, as `ARCH=arm64 tools/package.sh` builds the
# .debs (the spec names cross/'s meson file). On a machine without an RPM database of the build
# dependencies (Debian: apt-get install rpm), NODEPS=1 passes --nodeps:
# the build then uses whatever headers and libraries the machine has.
# The version grows with each commit (packaging/version.sh): the spec's
# Version is the VERSION file's, and the spec built (OUT_DIR/SPECS, in the
# source RPM) says this build's. Where rpm has no %meson macros (Debian),
# packaging/rpm/meson-macros-fallback defines them.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/build-rpm}" && cd "${1:-$ROOT/build-rpm}" && pwd)
SPEC=$ROOT/packaging/rpm/gdrhook.spec
mkdir -p "$OUT/SOURCES" "$OUT/SPECS" "$OUT/stage"
spec_version=$(sed -n 's/^Version: *//p' "$SPEC")
[ "$spec_version" = "$(cat "$ROOT/VERSION")" ] || {
	echo "package-rpm: $SPEC says Version $spec_version, VERSION says $(cat "$ROOT/VERSION")" >&2
	exit 1
}
VERSION=$("$ROOT/packaging/stage-source.sh" "$OUT/stage")
sed "s/^Version: .*/Version:        $VERSION/" "$SPEC" >"$OUT/SPECS/gdrhook.spec"
tar -C "$OUT/stage" -czf "$OUT/SOURCES/gdrhook-$VERSION.tar.gz" "gdrhook-$VERSION"
set --
[ -n "$(rpm --eval '%{?meson}')" ] || set -- --define "gdrhook_meson_macros $ROOT/packaging/rpm/meson-macros-fallback"
if [ -n "${ARCH:-}" ] && [ "$ARCH" != "$(uname -m)" ]; then
	set -- "$@" -bb --target "$ARCH"
else
	set -- "$@" -ba
fi
rpmbuild "$@" ${NODEPS:+--nodeps} --define "_topdir $OUT" "$OUT/SPECS/gdrhook.spec"
echo "package-rpm: built:"
find "$OUT/RPMS" "$OUT/SRPMS" -name '*.rpm' -exec stat -c '  %n %s bytes' {} +
