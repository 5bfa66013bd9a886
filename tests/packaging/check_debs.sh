#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/check_debs.sh DEB_DIR ARCH: the binary packages that
# tools/package.sh built into DEB_DIR are ARCH's (issue 41: the aarch64
# .debs of ARCH=arm64 tools/package.sh): gdrhook and libgdrhook-dev say
# Architecture ARCH and gdrhook-dkms all; every ELF file in them (the
# command, the shim, the Slurm plugin) is for ARCH's machine, read from
# its ELF header (readelf), not from the package's word. lintian is not
# run again here: tools/package.sh ran it on the same .changes with the
# same --fail-on, and fails the build where it complains.
set -eu
DEBS=$1
ARCH=$2
fail() { echo "check_debs: FAIL: $*" >&2; exit 1; }
case $ARCH in
arm64) machine=AArch64 ;;
amd64) machine="Advanced Micro Devices X86-64" ;;
*) fail "ARCH $ARCH: arm64 or amd64" ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-debs-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The last build's .changes (an earlier build's packages stay beside them)
# names its packages.
changes=$(ls -t "$DEBS"/gdrhook_*_"$ARCH".changes 2>/dev/null | head -1)
[ -n "$changes" ] || fail "no gdrhook_*_$ARCH.changes in $DEBS (ARCH=$ARCH tools/package.sh $DEBS)"

elves=0
for package in gdrhook libgdrhook-dev gdrhook-dkms; do
	deb=$(sed -n "s/^ [0-9a-f]\{32\} [0-9]* [a-z]* [a-z]* \(${package}_[^ ]*\\.deb\)$/\\1/p" "$changes")
	[ -n "$deb" ] || fail "no $package .deb in $changes"
	deb=$DEBS/$deb
	want=$ARCH
	[ $package = gdrhook-dkms ] && want=all
	got=$(dpkg-deb -f "$deb" Architecture)
	[ "$got" = "$want" ] || fail "$deb says Architecture $got, not $want"
	# The Slurm plugin is for the release of the header it was built
	# against: gdrhook breaks Debian's slurmd of every other release.
	if [ $package = gdrhook ]; then
		number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\)$/\1/p' /usr/include/slurm/slurm_version.h)
		series=$(printf '%d.%02d' $((number >> 16 & 255)) $((number >> 8 & 255)))
		next=$(printf '%d.%02d' $((number >> 16 & 255)) $(((number >> 8 & 255) + 1)))
		# dpkg-gencontrol orders the relations itself: compared as a set.
		breaks=$(dpkg-deb -f "$deb" Breaks)
		got=$(echo "$breaks" | tr ',' '\n' | sed 's/^ *//' | sort | tr '\n' ';')
		want=$(printf 'slurmd (<< %s~)\nslurmd (>= %s~)\n' "$series" "$next" | sort | tr '\n' ';')
		[ "$got" = "$want" ] || fail "$deb breaks '$breaks', not every slurmd but $series's"
		echo "  Breaks: $breaks"
	fi
	dpkg-deb -x "$deb" "$WORK/$package"
	for f in $(find "$WORK/$package" -type f); do
		head -c 4 "$f" | grep -q "^.ELF" || continue
		got=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
		[ "$got" = "$machine" ] || fail "${f#"$WORK"/} in $deb is for $got, not $machine"
		elves=$((elves + 1))
		echo "  ${f#"$WORK"/}: $got"
	done
done
[ "$elves" -ge 3 ] || fail "only $elves ELF files in the packages (the command, the shim, the Slurm plugin)"
echo "check_debs: $ARCH packages: Architecture $ARCH, $elves ELF files for $machine"
