#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/arm64_debs.sh OUT_DIR [NATIVE_OUT_DIR]: the aarch64 packages,
# cross-built from this tree by `ARCH=arm64 tools/package.sh OUT_DIR`
# (dpkg-buildpackage -a arm64 with cross/aarch64-linux-gnu.ini and the
# :arm64 libraries tests/packages/*.txt install; its log in OUT_DIR.log),
# lintian clean (package.sh fails otherwise), then checked by
# tests/packaging/check_debs.sh: Architecture arm64, the command, the shim
# and the Slurm plugin AArch64 ELF files; with NATIVE_OUT_DIR, every
# _all package the same bytes as the native build's of the same name.
# A package build, so the distribution's flags (-O2 -g, hardening), not
# the aarch64 test leg's objects. Measured on the shared 2-core machine
# (niced, load average 6 to 11), from a clean build folder: 643 s and
# 431 s of wall time, 250 s and 253 s of CPU time (user and system).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1
NATIVE_OUT=${2:-}
. "$ROOT/tests/packaging/compiler_cache.sh"
started=$(date +%s)
if ! ARCH=arm64 "$ROOT/tools/package.sh" "$OUT" >"$OUT.log" 2>&1; then
	tail -30 "$OUT.log"
	echo "arm64_debs: FAIL: ARCH=arm64 tools/package.sh $OUT (see $OUT.log)" >&2
	exit 1
fi
"$ROOT/tests/packaging/check_debs.sh" "$OUT" arm64
# An architecture-independent package is one file in a repository for
# every architecture: the amd64 build's (NATIVE_OUT) must be the same
# bytes, or the two clash under one name.
if [ -n "$NATIVE_OUT" ]; then
	found=0
	for deb in "$OUT"/*_all.deb; do
		[ -e "$deb" ] || continue
		native=$NATIVE_OUT/$(basename "$deb")
		[ -e "$native" ] || { echo "arm64_debs: FAIL: $(basename "$deb") has no twin in $NATIVE_OUT" >&2; exit 1; }
		cmp -s "$deb" "$native" || {
			echo "arm64_debs: FAIL: $(basename "$deb") differs between the arm64 and the native build" >&2
			exit 1
		}
		found=$((found + 1))
	done
	[ "$found" -gt 0 ] || { echo "arm64_debs: FAIL: no _all package in $OUT" >&2; exit 1; }
	echo "arm64_debs: $found architecture-independent package(s) the same bytes as $NATIVE_OUT's"
fi
echo "arm64_debs: built and checked in $(($(date +%s) - started)) s"
