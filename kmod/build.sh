#!/bin/sh
# build.sh SRC_DIR OUT_DIR [KDIR] [--test-provider | --tegra-test-provider]
#
# NV_P2P_H=/path/to/nv-p2p.h in the environment builds gdrhook.ko for the
# nvidia_p2p_* API that header declares (probes/HAVE_NV_P2P_TEGRA.sh);
# --tegra-test-provider builds the Tegra test provider
# (test_provider/tegra/, a gdrhook_tp.ko) instead of the test provider
# and exporter, for a gdrhook.ko built with
# NV_P2P_H=test_provider/tegra/linux/nv-p2p.h.
#
# KMOD_ARCH=arm64 in the environment builds for arm64 (KDIR: arm64
# headers); on another machine with Debian's cross compiler,
# aarch64-linux-gnu-gcc (CROSS_COMPILE overrides it). Default: the
# machine's own architecture.
# Out-of-tree build for Meson and the VM test: Kbuild writes objects next
# to the sources it builds, so the sources are copied into OUT_DIR/src and
# built there; OUT_DIR receives gdrhook.ko (and, with --test-provider, the
# test modules gdrhook_tp.ko and gdrhook_te.ko).
set -eu
SRC=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
KDIR=${3:-}
TP=${4:-}
[ -n "$KDIR" ] || KDIR=$("$SRC/find-kdir.sh") || {
	echo "build.sh: no kernel build tree (install linux-headers or set kernel_dir)" >&2
	exit 1
}
case ${KMOD_ARCH:-} in
'' | amd64 | x86_64) ;;
arm64 | aarch64)
	export ARCH=arm64
	[ "$(uname -m)" = aarch64 ] || export CROSS_COMPILE="${CROSS_COMPILE:-aarch64-linux-gnu-}"
	;;
*) echo "build.sh: KMOD_ARCH=$KMOD_ARCH: amd64 or arm64" >&2; exit 1 ;;
esac
mkdir -p "$OUT/src"
# Copy only sources; keep what Kbuild built last time so rebuilds are
# incremental. gdrhook_config.h is generated for the kernel being built
# against (the Makefile remakes it when KDIR changes): one left in the
# source tree by a `make` there is for whatever kernel that was, never ours.
(cd "$SRC" && find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.sh' \
	-o -name Kbuild -o -name Makefile \) ! -name gdrhook_config.h -type f -print) |
while read -r f; do
	mkdir -p "$OUT/src/$(dirname "$f")"
	cmp -s "$SRC/$f" "$OUT/src/$f" 2>/dev/null || cp "$SRC/$f" "$OUT/src/$f"
done
# The project's own builds treat warnings as errors (Kbuild: GDRHOOK_WERROR).
make -s -C "$OUT/src" KDIR="$KDIR" NV_P2P_H="${NV_P2P_H:-}" GDRHOOK_WERROR=1
cp "$OUT/src/gdrhook.ko" "$OUT/gdrhook.ko"
if [ "$TP" = "--test-provider" ]; then
	make -s -C "$OUT/src" KDIR="$KDIR" GDRHOOK_WERROR=1 test-provider
	cp "$OUT/src/test_provider/gdrhook_tp.ko" "$OUT/gdrhook_tp.ko"
	cp "$OUT/src/test_exporter/gdrhook_te.ko" "$OUT/gdrhook_te.ko"
elif [ "$TP" = "--tegra-test-provider" ]; then
	make -s -C "$OUT/src" KDIR="$KDIR" GDRHOOK_WERROR=1 test-provider-tegra
	cp "$OUT/src/test_provider/tegra/gdrhook_tp.ko" "$OUT/gdrhook_tp.ko"
fi
