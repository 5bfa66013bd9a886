#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/same_files_deb_rpm.sh, the install leg's comparison of
# the .debs' and the RPMs' files, on small packages made here: a .deb of
# Debian's layout (multiarch library folder, Slurm's slurm-wlm, /lib/udev,
# the DKMS source under the Debian version, Debian's copyright, and its
# -dbgsym package) and an RPM of RHEL's holding the same files pass it; an RPM without one of them
# fails it, naming the file, as does an RPM with a file the .deb lacks.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-samefiles-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_same_files_deb_rpm: FAIL: $*" >&2; exit 1; }
version=1.0+git1.abc

# The .debs and the .changes that names them, as tools/package.sh leaves them.
mkdir -p "$WORK/debs"
echo "Files:" >"$WORK/debs/gdrhook_${version}_amd64.changes"
deb_with() { # package files...: its .deb, named in the .changes
	root=$WORK/deb-$1
	deb=$WORK/debs/$1_${version}_amd64.deb
	mkdir -p "$root/DEBIAN"
	printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: test <test@gdrhook.invalid>\nDescription: test\n' \
		"$1" "$version" >"$root/DEBIAN/control"
	shift
	for f; do mkdir -p "$root/$(dirname "$f")" && : >"$root/$f"; done
	dpkg-deb --root-owner-group -b "$root" "$deb" >/dev/null
	printf ' %s %s misc optional %s\n' "$(md5sum <"$deb" | cut -d' ' -f1)" "$(stat -c %s "$deb")" "$(basename "$deb")" \
		>>"$WORK/debs/gdrhook_${version}_amd64.changes"
}
deb_with gdrhook usr/bin/gdrhook usr/lib/x86_64-linux-gnu/libgdrhook.so usr/lib/x86_64-linux-gnu/slurm-wlm/gdrhook_spank.so \
	lib/udev/rules.d/70-gdrhook.rules usr/src/gdrhook-$version/dkms.conf usr/share/man/man1/gdrhook.1.gz \
	usr/share/doc/gdrhook/copyright
deb_with gdrhook-dbgsym usr/lib/debug/.build-id/0d/d81c2d.debug

rpm_with() { # name files...: RPMs in WORK/name holding the files, as tools/package-rpm.sh leaves them
	dir=$WORK/$1
	shift
	mkdir -p "$dir/SPECS"
	{
		printf 'Name: gdrhook\nVersion: %s\nRelease: 1\nSummary: test\nLicense: MIT\n' "$version"
		printf '%%description\ntest\n%%install\n'
		for f; do printf 'mkdir -p %%{buildroot}%s && : >%%{buildroot}%s\n' "$(dirname "$f")" "$f"; done
		printf 'mkdir -p %%{buildroot}/usr/share/licenses/gdrhook && : >%%{buildroot}/usr/share/licenses/gdrhook/LICENSE\n'
		printf '%%files\n/usr/share/licenses/gdrhook/LICENSE\n'
		for f; do echo "$f"; done
	} >"$dir/SPECS/gdrhook.spec"
	rpmbuild -bb --nodeps --target x86_64 --define "_topdir $dir" --define '__os_install_post %{nil}' \
		"$dir/SPECS/gdrhook.spec" >"$dir.log" 2>&1 || { cat "$dir.log"; fail "rpmbuild of $1"; }
}
same="/usr/bin/gdrhook /usr/lib64/libgdrhook.so /usr/lib64/slurm/gdrhook_spank.so /usr/lib/udev/rules.d/70-gdrhook.rules
	/usr/src/gdrhook-$version/dkms.conf"
# shellcheck disable=SC2086 # one word per file
{
	rpm_with same $same /usr/share/man/man1/gdrhook.1.gz
	rpm_with missing $same
	rpm_with extra $same /usr/share/man/man1/gdrhook.1.gz /usr/lib/tmpfiles.d/gdrhook.conf
}
"$HERE/same_files_deb_rpm.sh" "$WORK/debs" "$WORK/same" amd64 || fail "the same files in both layouts fail"
check_fails() { # name words: the RPMs in WORK/name fail the comparison, saying words
	if "$HERE/same_files_deb_rpm.sh" "$WORK/debs" "$WORK/$1" amd64 >"$WORK/$1.out" 2>&1; then
		fail "RPMs $1 pass"
	fi
	grep -qF "$2" "$WORK/$1.out" || fail "RPMs $1 fail without '$2': $(cat "$WORK/$1.out")"
	echo "  $1: $2"
}
check_fails missing "only in the .debs: /usr/share/man/man1/gdrhook.1.gz"
check_fails extra "only in the RPMs: /usr/lib/tmpfiles.d/gdrhook.conf"
echo "test_same_files_deb_rpm: the same files in both layouts pass; one missing, or one more, fails"
