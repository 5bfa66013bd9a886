#!/bin/sh
# check_build.sh - how gdrhook.ko builds where users build it
# (kmod/README.md, portability), checked on the host with every installed kernel's headers:
#  - one build directory rebuilt against another kernel regenerates the
#    probe results (gdrhook_config.h) for that kernel;
#  - a gdrhook_config.h left in the source tree is never used;
#  - the Kbuild files do not turn warnings into errors unless the build asks
#    (GDRHOOK_WERROR=1, what build.sh passes): a DKMS install under a newer
#    compiler must not fail on a new warning;
#  - dkms.conf builds only for kernels the module supports (5.8 and later);
#  - modinfo's version is the tree's VERSION (the package's, where a
#    package build wrote it there), and DKMS's build passes its
#    PACKAGE_VERSION, which the module then says;
#  - the module builds against every installed kernel.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
failed=0
check() { # what command...
	what=$1
	shift
	if "$@"; then echo "check_build: ok: $what"; else echo "check_build: FAILED: $what"; failed=$((failed + 1)); fi
}

kdirs=
for v in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V); do
	[ -f "/usr/src/linux-headers-$v/Makefile" ] && kdirs="$kdirs /usr/src/linux-headers-$v"
done
[ -n "$kdirs" ] || { echo "check_build: FAILED: no kernel headers installed"; exit 1; }

# A source copy with a stale probe header, as a `make` in kmod/ leaves one,
# and the tree's VERSION beside it, where build.sh reads it.
cp -a "$ROOT/kmod" "$WORK/src"
cp "$ROOT/VERSION" "$WORK/VERSION"
printf '#error "stale gdrhook_config.h used"\n' >"$WORK/src/gdrhook_config.h"

first=
for kdir in $kdirs; do
	if MAKEFLAGS=-j2 "$WORK/src/build.sh" "$WORK/src" "$WORK/out" "$kdir" >"$WORK/log" 2>&1; then
		built=yes
	else
		built=no
		tail -20 "$WORK/log"
	fi
	check "builds against $kdir, in the build directory of the kernel before it" [ "$built" = yes ]
	check "probe results regenerated for $kdir" grep -q "for $kdir;" "$WORK/out/src/gdrhook_config.h"
	[ -n "$first" ] || first=$kdir
done

for kb in "$ROOT/kmod/Kbuild" "$ROOT/tests/kmods/provider/Kbuild" "$ROOT/tests/kmods/provider/tegra/Kbuild" "$ROOT/tests/kmods/exporter/Kbuild"; do
	check "${kb#$ROOT/} adds -Werror only when GDRHOOK_WERROR=1" \
		sh -c "make -s -f - print KDIR=/nonexistent <<'MK' | grep -qx ''
include $kb
print: ; @echo \$(filter -Werror,\$(ccflags-y))
MK"
done

version=$(cat "$ROOT/VERSION")
check "modinfo says the tree's version, $version" \
	[ "$(/sbin/modinfo -F version "$WORK/out/gdrhook.ko")" = "$version" ]
# DKMS's build: dkms.conf as a package installs it (its version filled in)
# read by bash as dkms reads it, its MAKE line run in the module's source
# as /usr/src/gdrhook-VERSION holds it (no VERSION file of the tree), up
# to the version header: the module's version is the package's.
mkdir "$WORK/dkms"
cp -a "$ROOT/kmod" "$WORK/dkms/gdrhook-9.8.7+git1.abc"
dkms_make=$(sed 's/#MODULE_VERSION#/9.8.7+git1.abc/' "$ROOT/kmod/packaging/dkms.conf" |
	kernel_source_dir=$first bash -c '. /dev/stdin; echo "${MAKE[0]}"')
check "dkms.conf's MAKE passes the package's version ($dkms_make)" \
	sh -c "cd '$WORK/dkms/gdrhook-9.8.7+git1.abc' && $dkms_make gdrhook_version.h >/dev/null &&
		grep -qx '#define GDRHOOK_MODULE_VERSION \"9.8.7+git1.abc\"' gdrhook_version.h"

# dkms: the same regular expression dkms applies to the kernel release.
re=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$ROOT/kmod/packaging/dkms.conf")
check "dkms.conf has BUILD_EXCLUSIVE_KERNEL" [ -n "$re" ]
for k in 5.8.0-1-amd64 5.10.0-30-amd64 6.1.0-56-amd64 6.12.117+deb12-rt-amd64 7.0.0; do
	check "dkms builds for $k" sh -c "echo '$k' | grep -Eq '$re'"
done
for k in 4.19.0-27-amd64 5.4.0-100-generic 5.7.19; do
	check "dkms refuses $k" sh -c "! echo '$k' | grep -Eq '$re'"
done

[ "$failed" = 0 ] && echo "check_build: PASS" || echo "check_build: FAIL ($failed failed)"
[ "$failed" = 0 ]
