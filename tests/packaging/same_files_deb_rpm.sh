#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/same_files_deb_rpm.sh DEB_DIR RPM_DIR ARCH: the RPMs
# that tools/package-rpm.sh built into RPM_DIR hold every file the .debs
# that tools/package.sh built into DEB_DIR hold, and no other, ARCH's
# (amd64 or arm64: the RPMs of x86_64 or aarch64), so that an operator of
# either distribution gets the same things (the Slurm plugin, the manual
# pages, the tmpfiles.d entry, the systemd units, the udev rule...).
# Files and links are compared, folders not, after these differences of
# layout, each distribution's own:
#   Debian                           RHEL
#   /usr/lib/MULTIARCH/slurm-wlm/    /usr/lib64/slurm/ (its Slurm's plugins)
#   /usr/lib/MULTIARCH/              /usr/lib64/
#   /lib/ (udev, systemd)            /usr/lib/
#   /usr/src/gdrhook-DEBVERSION/     /usr/src/gdrhook-RPMVERSION/ (DKMS)
# and without what each keeps of its own: /usr/share/doc/ (Debian's
# copyright and changelog, RHEL's %doc), /usr/share/licenses/ (RHEL's
# %license), /usr/share/lintian/ (Debian's checker), /usr/lib/.build-id/
# (rpm's links to the debug files) and Debian's -dbgsym packages (RHEL's
# rpm makes -debuginfo packages of its own; Debian's makes none).
set -eu
DEBS=$1
RPMS=$2
ARCH=$3
fail() { echo "same_files_deb_rpm: FAIL: $*" >&2; exit 1; }
case $ARCH in
amd64) rpm_arch=x86_64 multiarch=x86_64-linux-gnu ;;
arm64) rpm_arch=aarch64 multiarch=aarch64-linux-gnu ;;
*) fail "ARCH $ARCH: amd64 or arm64" ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-same-files-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The last build's .changes names its .debs; the last spec built names
# the RPMs' version.
changes=$(ls -t "$DEBS"/gdrhook_*_"$ARCH".changes 2>/dev/null | head -1)
[ -n "$changes" ] || fail "no gdrhook_*_$ARCH.changes in $DEBS"
debs=$(sed -n "s/^ [0-9a-f]\{32\} [0-9]* [a-z]* [a-z]* \(.*\.deb\)$/\1/p" "$changes" | grep -v -- '-dbgsym_')
version=$(sed -n 's/^Version: *//p' "$RPMS/SPECS/gdrhook.spec")
rpms=$(find "$RPMS/RPMS" -name "gdrhook*-$version-*.$rpm_arch.rpm" -o -name "gdrhook*-$version-*.noarch.rpm")
[ -n "$debs" ] || fail "no .deb in $changes"
[ -n "$rpms" ] || fail "no $rpm_arch RPM of version $version in $RPMS/RPMS"

for deb in $debs; do
	dpkg-deb -c "$DEBS/$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\.||'
done | sed -e "s|^/usr/lib/$multiarch/slurm-wlm/|/usr/lib64/slurm/|" -e "s|^/usr/lib/$multiarch/|/usr/lib64/|" \
	-e 's|^/lib/|/usr/lib/|' -e 's|^/usr/src/gdrhook-[^/]*/|/usr/src/gdrhook-VERSION/|' |
	grep -v -e '^/usr/share/doc/' -e '^/usr/share/lintian/' | sort >"$WORK/debs"
for rpm in $rpms; do
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" 2>/dev/null | awk '$1 !~ /^d/ { print $2 }'
done | sed -e 's|^/usr/src/gdrhook-[^/]*/|/usr/src/gdrhook-VERSION/|' |
	grep -v -e '^/usr/share/doc/' -e '^/usr/share/licenses/' -e '^/usr/lib/\.build-id/' | sort >"$WORK/rpms"

comm -23 "$WORK/debs" "$WORK/rpms" | sed 's/^/  only in the .debs: /' >"$WORK/missing"
comm -13 "$WORK/debs" "$WORK/rpms" | sed 's/^/  only in the RPMs: /' >>"$WORK/missing"
if [ -s "$WORK/missing" ]; then
	cat "$WORK/missing" >&2
	fail "the $rpm_arch RPMs and the $ARCH .debs hold other files (above)"
fi
echo "same_files_deb_rpm: the $rpm_arch RPMs hold the $(wc -l <"$WORK/debs") files of the $ARCH .debs, and no other"
