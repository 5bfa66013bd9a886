#!/bin/sh
# build.sh KMOD_OUT KDIR [--tegra] - the test modules, never shipped
# (kmod/README.md, "Test modules"), built against the gdrhook.ko build
# that kmod/build.sh SRC KMOD_OUT KDIR left in KMOD_OUT/src: the provider
# takes its nv_p2p_abi.h from there, the exporter its compat.h and probe
# results (gdrhook_config.h). KMOD_OUT receives gdrhook_tp.ko and
# gdrhook_te.ko, or with --tegra the Tegra provider's gdrhook_tp.ko (for a
# gdrhook.ko built with NV_P2P_H=tests/kmods/provider/tegra/linux/nv-p2p.h).
# KMOD_ARCH as for kmod/build.sh. The sources are copied to KMOD_OUT/tests
# (changed files only, so a rebuild is incremental) and built there.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(cd "$1" && pwd)
KDIR=$2
. "$HERE/../../kmod/kbuild-arch.sh"
[ -f "$OUT/src/gdrhook_config.h" ] || {
	echo "tests/kmods/build.sh: no gdrhook.ko build in $OUT (kmod/build.sh first)" >&2
	exit 1
}
(cd "$HERE" && find . \( -name '*.c' -o -name '*.h' -o -name Kbuild \) -type f -print) |
while read -r f; do
	mkdir -p "$OUT/tests/$(dirname "$f")"
	cmp -s "$HERE/$f" "$OUT/tests/$f" 2>/dev/null || cp "$HERE/$f" "$OUT/tests/$f"
done
build() { # DIR: one module's folder under KMOD_OUT/tests
	# Kbuild takes 2 s or more to find nothing to do; these modules change
	# far less often than gdrhook.ko (one module mutant after another,
	# tests/mutants/run.py): skipped while their sources, the module's
	# headers they include and the kernel are the ones last built.
	# (Every test module's sources, as they include each other's headers.)
	inputs=$( (echo "$KDIR"; cd "$OUT" && { find tests \( -name '*.c' -o -name '*.h' -o -name Kbuild \) -type f
		find src -name '*.h' -type f; } | LC_ALL=C sort | xargs cat) | sha256sum)
	if [ -f "$OUT/tests/$1/.built" ] && [ "$(cat "$OUT/tests/$1/.built")" = "$inputs" ] &&
		ls "$OUT/tests/$1"/*.ko >/dev/null 2>&1; then
		return 0
	fi
	rm -f "$OUT/tests/$1/.built"
	make -s -C "$KDIR" M="$OUT/tests/$1" GDRHOOK_KMOD_DIR="$OUT/src" GDRHOOK_WERROR=1 modules
	echo "$inputs" >"$OUT/tests/$1/.built"
}
if [ "${3:-}" = --tegra ]; then
	build provider/tegra
	cp "$OUT/tests/provider/tegra/gdrhook_tp.ko" "$OUT/gdrhook_tp.ko"
else
	build provider
	build exporter
	cp "$OUT/tests/provider/gdrhook_tp.ko" "$OUT/tests/exporter/gdrhook_te.ko" "$OUT/"
fi
