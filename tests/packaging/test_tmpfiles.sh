#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The Slurm plugin's default log folder, /var/tmp/gdrhook (logdir=,
# tools/slurm/gdrhook.conf.in), is made by the gdrhook package at install
# (issue 41): debhelper's own step (dh_installtmpfiles) run on
# packaging/debian as the package build runs it, its files unpacked into a
# scratch root and its postinst part run as dpkg runs it (configure,
# DPKG_ROOT the root). Then the folder as the plugin meets it: root's,
# mode 1777, and as two unprivileged users (setpriv), each makes its own
# USER/JOBID folder in it and neither can remove or rename the other's
# (sticky, as /tmp), which the plugin's make_folder relies on. Purged, the
# package removes it where it is empty, and leaves the users' logs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-tmpfiles-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_tmpfiles: FAIL: $*" >&2; exit 1; }
for tool in dh_installtmpfiles systemd-tmpfiles setpriv; do
	command -v $tool >/dev/null || fail "$tool not found (apt-get install debhelper systemd util-linux)"
done

# The package's debian/ as tools/package.sh stages it.
mkdir -p "$WORK/src"
cp -a "$HERE/../../packaging/debian" "$WORK/src/debian"
sed -i 's|@MAINTAINER@|test <test@gdrhook.invalid>|' "$WORK/src/debian/control"
printf 'gdrhook (0.1.0) unstable; urgency=medium\n\n  * test\n\n -- test <test@gdrhook.invalid>  %s\n' \
	"$(date -R)" >"$WORK/src/debian/changelog"
(cd "$WORK/src" && dh_installtmpfiles -pgdrhook) || fail "dh_installtmpfiles failed"
conf=$WORK/src/debian/gdrhook/usr/lib/tmpfiles.d/gdrhook.conf
[ -f "$conf" ] || fail "the gdrhook package ships no tmpfiles.d entry (packaging/debian/gdrhook.tmpfiles)"
postinst=$WORK/src/debian/gdrhook.postinst.debhelper
grep -q 'systemd-tmpfiles .*--create gdrhook.conf' "$postinst" 2>/dev/null ||
	fail "the postinst does not apply the tmpfiles.d entry"

# Installed: the package's files in a fresh root, then its postinst.
ROOT=$WORK/root
mkdir -p "$ROOT"
cp -a "$WORK/src/debian/gdrhook/." "$ROOT/"
DPKG_ROOT=$ROOT sh "$postinst" configure
logdir=$ROOT/var/tmp/gdrhook
[ -d "$logdir" ] && [ ! -L "$logdir" ] || fail "no folder /var/tmp/gdrhook after install"
[ "$(stat -c '%a %u %g' "$logdir")" = "1777 0 0" ] ||
	fail "/var/tmp/gdrhook is $(stat -c '%a %u:%g' "$logdir"), not root's with mode 1777"

# As the plugin meets it: jobs of two users, neither root.
chmod 0755 "$WORK"
as() { # uid command...
	uid=$1
	shift
	setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
}
for uid in 65534 65533; do
	as $uid mkdir "$logdir/user$uid" "$logdir/user$uid/1" || fail "user $uid cannot make its folder"
done
as 65533 rmdir "$logdir/user65534/1" 2>/dev/null && fail "user 65533 removed another user's job folder"
as 65533 mv "$logdir/user65534" "$logdir/taken" 2>/dev/null &&
	fail "user 65533 renamed another user's folder: the log folder is not sticky"
[ "$(stat -c %u "$logdir/user65534")" = 65534 ] || fail "user 65534's folder changed hands"

# Purged: the folder goes when no job left logs in it (the logs are the
# users', kept), so that a purge leaves nothing of the package behind.
purge() {
	sed 's/^#DEBHELPER#$//' "$WORK/src/debian/gdrhook.postrm" >"$WORK/postrm" 2>/dev/null ||
		fail "the gdrhook package has no postrm (packaging/debian/gdrhook.postrm)"
	DPKG_ROOT=$ROOT sh "$WORK/postrm" purge || fail "postrm purge failed"
}
purge
[ -d "$logdir/user65534/1" ] || fail "purge removed the users' log folders"
rm -rf "$logdir"/user*
purge
[ ! -e "$logdir" ] || fail "purge left the empty /var/tmp/gdrhook"
echo "test_tmpfiles: /var/tmp/gdrhook made at install, root's, 1777; users make their own folders, not each other's; purge removes it empty"
