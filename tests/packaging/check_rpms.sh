#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/check_rpms.sh RPM_DIR ARCH: the binary RPMs that
# tools/package-rpm.sh built into RPM_DIR (ARCH=aarch64: cross-built) are
# ARCH's: gdrhook, gdrhook-devel and gdrhook-slurm say ARCH and
# gdrhook-dkms noarch; every ELF file in them is for ARCH's machine and
# hardened (tests/packaging/check_elf_files.sh, as the .debs'); and
# gdrhook-slurm requires the Slurm release that the packaged `gdrhook
# --version` says its plugin was built for (run under qemu-user for
# another machine), and no other.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
RPMS=$(cd "$1" && pwd)
ARCH=$2
fail() { echo "check_rpms: FAIL: $*" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-rpms-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The last spec built names the version (an earlier build's RPMs stay).
version=$(sed -n 's/^Version: *//p' "$RPMS/SPECS/gdrhook.spec")
for package in gdrhook gdrhook-devel gdrhook-slurm gdrhook-dkms; do
	want=$ARCH
	[ $package = gdrhook-dkms ] && want=noarch
	rpm=$(find "$RPMS/RPMS" -name "$package-$version-*.$want.rpm" | head -1)
	[ -n "$rpm" ] || fail "no $package-$version RPM for $want in $RPMS/RPMS"
	got=$(rpm -qp --qf '%{ARCH}' "$rpm" 2>/dev/null)
	[ "$got" = "$want" ] || fail "$rpm says arch $got, not $want"
	(mkdir -p "$WORK/root" && cd "$WORK/root" && rpm2cpio "$rpm" | cpio -idm --quiet) ||
		fail "cannot unpack $rpm"
	[ $package = gdrhook-slurm ] && slurm_rpm=$rpm
done
"$HERE/check_elf_files.sh" "$ARCH" "$WORK/root"

# The Slurm the plugin was built for, as the packaged command says it.
wrapper=
[ "$ARCH" = "$(uname -m)" ] || wrapper=qemu-$ARCH-static
built_for=$($wrapper "$WORK/root/usr/bin/gdrhook" --version | sed -n 's/^Slurm plugin built for Slurm \([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p')
[ -n "$built_for" ] || fail "the packaged gdrhook --version names no Slurm"
major=${built_for% *}
minor=${built_for#* }
minor=${minor#0} # Slurm writes 05: decimal, not octal
series=$(printf '%d.%02d' "$major" "$minor")
next=$(printf '%d.%02d' "$major" "$((minor + 1))")
requires=$(rpm -qp --requires "$slurm_rpm" 2>/dev/null)
echo "$requires" | grep -qxF "(slurm >= $series~ with slurm < $next~)" ||
	fail "gdrhook-slurm requires '$(echo "$requires" | paste -sd';')', not Slurm $series alone"
echo "check_rpms: $ARCH RPMs of $version: arch $ARCH, their ELF files for $ARCH and hardened; gdrhook-slurm requires Slurm $series, its plugin's"
