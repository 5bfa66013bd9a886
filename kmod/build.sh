#!/bin/sh
# build.sh SRC_DIR OUT_DIR [KDIR]
#
# NV_P2P_H=/path/to/nv-p2p.h in the environment builds gdrhook.ko for the
# nvidia_p2p_* API that header declares (probes/HAVE_NV_P2P_TEGRA.sh).
#
# KMOD_ARCH=arm64 in the environment builds for arm64 (KDIR: arm64
# headers); on another machine with Debian's cross compiler,
# aarch64-linux-gnu-gcc (CROSS_COMPILE overrides it). Default: the
# machine's own architecture.
# Out-of-tree build for Meson and the VM test: Kbuild writes objects next
# to the sources it builds, so the sources are copied into OUT_DIR/src and
# built there; OUT_DIR receives gdrhook.ko. (The test modules build
# against OUT_DIR/src afterwards: tests/kmods/build.sh.) GDRHOOK_VERSION in
# the environment is the version modinfo shows (default: ../VERSION).
set -eu
SRC=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
KDIR=${3:-}
[ -n "$KDIR" ] || KDIR=$("$SRC/find-kdir.sh") || {
	echo "build.sh: no kernel build tree (install linux-headers or set kernel_dir)" >&2
	exit 1
}
. "$SRC/kbuild-arch.sh"
mkdir -p "$OUT/src"
# Copy only sources; keep what Kbuild built last time so rebuilds are
# incremental. gdrhook_config.h is generated for the kernel being built
# against (the Makefile remakes it when KDIR changes): one left in the
# source tree by a `make` there is for whatever kernel that was, never ours.
(cd "$SRC" && find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.sh' \
	-o -name Kbuild -o -name Makefile \) ! -name gdrhook_config.h ! -name gdrhook_version.h \
	-type f -print) |
while read -r f; do
	mkdir -p "$OUT/src/$(dirname "$f")"
	cmp -s "$SRC/$f" "$OUT/src/$f" 2>/dev/null || cp "$SRC/$f" "$OUT/src/$f"
done
# The project's own builds treat warnings as errors (Kbuild: GDRHOOK_WERROR).
# The module says the tree's version (VERSION beside kmod/, which a package
# build writes with its own), which the copy has no way to find.
make -s -C "$OUT/src" KDIR="$KDIR" NV_P2P_H="${NV_P2P_H:-}" GDRHOOK_WERROR=1 \
	GDRHOOK_VERSION="${GDRHOOK_VERSION:-$(cat "$SRC/../VERSION")}"
cp "$OUT/src/gdrhook.ko" "$OUT/gdrhook.ko"
