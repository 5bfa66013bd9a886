#!/bin/sh
# check_kernel_style.sh - kmod/ and tests/kmods/ under the kernel's own checkers
# (kmod/README.md, "Kernel checkers"): any report fails it.
#  - checkpatch.pl --strict --no-tree -f on every .c and .h of the module,
#    its uapi header and the test modules, taken from Debian's
#    linux-source-6.1 (the three files it reads, extracted once into
#    ~/.cache/gdrhook/checkpatch/VERSION, or GDRHOOKTEST_CHECKPATCH names a
#    checkpatch.pl beside its spelling.txt);
#  - sparse (make C=1 in a new folder: every file as it compiles) over
#    gdrhook.ko and the test modules, against the amd64 headers
#    find-kdir.sh finds.
# A missing checker is a failure, not a skip. An argument, checkpatch or
# sparse, runs that checker alone: the suite runs them as two tests, so a
# mutant that one of them catches waits for that one only.
set -eu
only=${1:-}
case $only in
'' | checkpatch | sparse) ;;
*) echo "check_kernel_style: unknown checker '$only' (checkpatch or sparse)" && exit 2 ;;
esac
wanted() { [ -z "$only" ] || [ "$only" = "$1" ]; }
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-style.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
failed=0
fail() { echo "check_kernel_style: FAILED: $*"; failed=$((failed + 1)); }

# The reports we keep, per file, and why (checkpatch --ignore TYPES):
#  compat.h         LINUX_VERSION_CODE, CONSTANT_COMPARISON: an out-of-tree
#                   module refuses kernels it cannot build for by version
#                   (older than 5.8; 6.2+ without a probe's result); every
#                   other variant is chosen by a probe.
#                   EMBEDDED_FILENAME: its #include <linux/compat.h>.
#  compat.h, nvp2p.h, stats.c   MACRO_ARG_REUSE: the argument is a
#                   name (a struct member, a field), never an expression,
#                   or the macro stands in for the kernel's own that does the same.
ignored_in() {
	case $1 in
	compat.h) echo LINUX_VERSION_CODE,CONSTANT_COMPARISON,EMBEDDED_FILENAME,MACRO_ARG_REUSE ;;
	nvp2p.h | stats.c) echo MACRO_ARG_REUSE ;;
	*) echo NONE ;;
	esac
}

checkpatch=${GDRHOOKTEST_CHECKPATCH:-}
if ! wanted checkpatch; then
	:
elif [ -z "$checkpatch" ]; then
	src=/usr/src/linux-source-6.1.tar.xz
	if [ -r "$src" ]; then
		version=$(dpkg-query -W -f '${Version}' linux-source-6.1)
		cache=$HOME/.cache/gdrhook/checkpatch/$version
		if [ ! -f "$cache/scripts/checkpatch.pl" ]; then
			mkdir -p "$cache.tmp"
			tar -xJf "$src" -C "$cache.tmp" --strip-components=1 \
				linux-source-6.1/scripts/checkpatch.pl linux-source-6.1/scripts/spelling.txt \
				linux-source-6.1/scripts/const_structs.checkpatch
			rm -rf "$cache" && mv "$cache.tmp" "$cache"
		fi
		checkpatch=$cache/scripts/checkpatch.pl
	fi
fi
if ! wanted checkpatch; then
	:
elif [ -z "$checkpatch" ] || [ ! -f "$checkpatch" ]; then
	fail "no checkpatch.pl (apt-get install linux-source-6.1)"
else
	# From inside each folder: checkpatch tells the uapi header by its
	# path (include/uapi/), and judges it by the rules for one.
	checked=0
	for dir in kmod tests/kmods; do
		cd "$ROOT/$dir"
		for f in $(find . -name '*.[ch]' ! -name gdrhook_config.h ! -name '*.mod.c' | sed 's|^\./||' | sort); do
			checked=$((checked + 1))
			# Silent and 0 when the file is clean; any report (ERROR,
			# WARNING, CHECK) or a checkpatch that could not run fails.
			if ! perl "$checkpatch" --strict --no-tree -f --terse --show-types \
				--ignore "$(ignored_in "$(basename "$f")")" "$f" >"$WORK/cp" 2>&1 ||
				[ -s "$WORK/cp" ]; then
				cat "$WORK/cp"
				fail "checkpatch --strict: $dir/$f"
			fi
		done
	done
	echo "check_kernel_style: checkpatch --strict ran on $checked files"
fi

if ! wanted sparse; then
	:
elif ! command -v sparse >/dev/null 2>&1; then
	fail "sparse not found (apt-get install sparse)"
elif ! kdir=$("$ROOT/kmod/find-kdir.sh"); then
	fail "no kernel headers for sparse (apt-get install linux-headers-amd64)"
else
	# Sparse on every file as it compiles (KBUILD_CHECKSRC=1, the
	# environment's spelling of make C=1): $WORK is new, so every file
	# compiles. One pass, where building first and checking again with
	# C=2 took twice as long. The test modules (tests/kmods/build.sh)
	# build against each gdrhook.ko build.
	sparse_build() { # out-dir [NV_P2P_H] [--tegra]
		{ NV_P2P_H=${2:-} KBUILD_CHECKSRC=1 MAKEFLAGS=-j2 \
			"$ROOT/kmod/build.sh" "$ROOT/kmod" "$WORK/$1" "$kdir" &&
			KBUILD_CHECKSRC=1 MAKEFLAGS=-j2 "$ROOT/tests/kmods/build.sh" "$WORK/$1" "$kdir" ${3:-}; } \
			>"$WORK/$1.log" 2>&1 || { cat "$WORK/$1.log"; fail "module build in $1 against $kdir"; }
		if grep -E ': (warning|error):' "$WORK/$1.log"; then
			fail "sparse reports in the $1 build"
		fi
	}
	sparse_build out
	# And the Tegra flavour with its test provider (the probe picks it
	# for the tests' Tegra nv-p2p.h).
	sparse_build out-tegra "$ROOT/tests/kmods/provider/tegra/linux/nv-p2p.h" --tegra
	echo "check_kernel_style: sparse ran against $kdir"
fi

[ "$failed" = 0 ] && echo "check_kernel_style: PASS" || echo "check_kernel_style: FAIL ($failed failed)"
[ "$failed" = 0 ]
