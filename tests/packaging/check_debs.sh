#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/check_debs.sh DEB_DIR ARCH: the binary packages that
# tools/package.sh built into DEB_DIR are ARCH's (issue 41: the aarch64
# .debs of ARCH=arm64 tools/package.sh): gdrhook and libgdrhook-dev say
# Architecture ARCH and gdrhook-dkms all; every ELF file in them (the
# command, the shim, the Slurm plugin) is for ARCH's machine, read from
# its ELF header (readelf), not from the package's word, and hardened
# (tests/packaging/check_elf_files.sh, shared with the RPMs'). lintian is not
# run again here: tools/package.sh ran it on the same .changes with the
# same --fail-on, and fails the build where it complains.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DEBS=$1
ARCH=$2
fail() { echo "check_debs: FAIL: $*" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-debs-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The last build's .changes (an earlier build's packages stay beside them)
# names its packages.
changes=$(ls -t "$DEBS"/gdrhook_*_"$ARCH".changes 2>/dev/null | head -1)
[ -n "$changes" ] || fail "no gdrhook_*_$ARCH.changes in $DEBS (ARCH=$ARCH tools/package.sh $DEBS)"

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
done
report=$("$HERE/check_elf_files.sh" "$ARCH" "$WORK") || exit 1
echo "$report"
elves=$(echo "$report" | grep -c '^  ')
[ "$elves" -ge 3 ] || fail "only $elves ELF files in the packages (the command, the shim, the Slurm plugin)"
echo "check_debs: $ARCH packages: Architecture $ARCH, $elves ELF files for $ARCH, hardened"
