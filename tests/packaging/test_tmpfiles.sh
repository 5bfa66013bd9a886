#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The Slurm plugin's default log folder, /var/tmp/gdrhook (logdir=,
# tools/slurm/gdrhook.conf.in), is made by the gdrhook package at install
# (issue 41): debhelper's own step (dh_installtmpfiles) run on
# packaging/debian as the package build runs it, its files unpacked into a
# scratch root and its postinst part run as dpkg runs it (configure,
# DPKG_ROOT the root). Then the folder as the plugin meets it: root's,
# mode 0755, where no unprivileged user (setpriv) makes a folder (the
# plugin makes each user's, as root: tools/slurm/log_tree.h); an older
# package's 1777 folder is made 0755. Its age: systemd-tmpfiles --clean
# removes a log last written more than ten days ago, and its emptied
# folder, and keeps a newer one. Purged, the package removes it where it
# is empty, and leaves the users' logs.
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
[ "$(stat -c '%a %u %g' "$logdir")" = "755 0 0" ] ||
	fail "/var/tmp/gdrhook is $(stat -c '%a %u:%g' "$logdir"), not root's with mode 755"

# As the plugin meets it: no user makes a folder in it (another user's
# folder made first would be refused, and the job run without gdrhook).
chmod 0755 "$WORK"
setpriv --reuid=65534 --regid=65534 --clear-groups mkdir "$logdir/user65533" 2>/dev/null &&
	fail "an unprivileged user made a folder in /var/tmp/gdrhook"
# An older package's folder, 1777, with a user's folder in it: made 0755
# at the next --create (each boot, each install), the user's left theirs.
chmod 1777 "$logdir"
mkdir -p "$logdir/user65534/1" && chown -R 65534:65534 "$logdir/user65534"
DPKG_ROOT=$ROOT sh "$postinst" configure
[ "$(stat -c %a "$logdir")" = 755 ] || fail "an older 1777 /var/tmp/gdrhook stays $(stat -c %a "$logdir")"
[ "$(stat -c %u "$logdir/user65534")" = 65534 ] || fail "user 65534's folder changed hands"

# Aged: a log last written 20 days ago goes, and its emptied job folder;
# one written now stays.
mkdir -p "$logdir/user65534/2"
echo old >"$logdir/user65534/1/old.jsonl"
echo new >"$logdir/user65534/2/new.jsonl"
touch -d '20 days ago' "$logdir/user65534/1/old.jsonl" "$logdir/user65534/1"
systemd-tmpfiles --clean --root="$ROOT" >/dev/null 2>&1 || fail "systemd-tmpfiles --clean failed"
[ ! -e "$logdir/user65534/1/old.jsonl" ] || fail "a log 20 days old was not removed (no age)"
[ ! -e "$logdir/user65534/1" ] || fail "the emptied job folder of an old log stayed"
[ -f "$logdir/user65534/2/new.jsonl" ] || fail "systemd-tmpfiles --clean removed a new log"

# Purged: the folder goes when no job left logs in it (the logs are the
# users', kept), so that a purge leaves nothing of the package behind.
purge() {
	sed 's/^#DEBHELPER#$//' "$WORK/src/debian/gdrhook.postrm" >"$WORK/postrm" 2>/dev/null ||
		fail "the gdrhook package has no postrm (packaging/debian/gdrhook.postrm)"
	DPKG_ROOT=$ROOT sh "$WORK/postrm" purge || fail "postrm purge failed"
}
purge
[ -d "$logdir/user65534/2" ] || fail "purge removed the users' log folders"
rm -rf "$logdir"/user*
purge
[ ! -e "$logdir" ] || fail "purge left the empty /var/tmp/gdrhook"
echo "test_tmpfiles: /var/tmp/gdrhook made at install, root's, 0755, where no user makes a folder; logs aged 10 days; purge removes it empty"
