#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/rpms.sh OUT_DIR ARCH DEB_DIR: the RPMs of ARCH (x86_64,
# or aarch64 cross-built from x86-64), built from this tree by
# `NODEPS=1 ARCH=ARCH tools/package-rpm.sh OUT_DIR` (its log in
# OUT_DIR.log; --nodeps: Debian has no RPM database of the build
# dependencies, the build uses Debian's headers and libraries), then
# checked: tests/packaging/check_rpms.sh (their architecture, every ELF
# file ARCH's and hardened, gdrhook-slurm's Slurm) and
# tests/packaging/same_files_deb_rpm.sh against the .debs of the same
# machine in DEB_DIR (tools/package.sh: every file of the .debs, and no
# other). tests/run_all.sh runs it in its install leg, after the .debs.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1
ARCH=$2
DEBS=$3
case $ARCH in
x86_64) deb_arch=amd64 ;;
aarch64) deb_arch=arm64 ;;
*) echo "rpms: ARCH $ARCH: x86_64 or aarch64" >&2; exit 1 ;;
esac
. "$ROOT/tests/packaging/compiler_cache.sh"
# rpmbuild compiles in OUT/BUILD/gdrhook-VERSION, a folder named by the
# commit, with -g and, on Debian's rpm, no -ffile-prefix-map: ccache then
# hashes that folder and never finds one build's objects for the next
# commit's. These RPMs are checked, not shipped: their debug information
# may name the folder of the build that compiled an object first.
CCACHE_NOHASHDIR=1
export CCACHE_NOHASHDIR
started=$(date +%s)
if ! NODEPS=1 ARCH=$ARCH "$ROOT/tools/package-rpm.sh" "$OUT" >"$OUT.log" 2>&1; then
	tail -30 "$OUT.log"
	echo "rpms: FAIL: NODEPS=1 ARCH=$ARCH tools/package-rpm.sh $OUT (see $OUT.log)" >&2
	exit 1
fi
"$ROOT/tests/packaging/check_rpms.sh" "$OUT" "$ARCH"
"$ROOT/tests/packaging/same_files_deb_rpm.sh" "$DEBS" "$OUT" "$deb_arch"
echo "rpms: $ARCH built and checked in $(($(date +%s) - started)) s"
