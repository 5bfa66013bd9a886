#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The Debian package's gdrhook group belongs to whoever made it (issue 39):
# the maintainer scripts (packaging/debian/gdrhook-dkms.preinst, .postinst,
# .postrm) run against a stand-in group database (getent, groupadd,
# groupdel and systemd-sysusers as shell functions over a file) under
# DPKG_ROOT, the root dpkg runs them for. Two installs: on a machine where
# the admin made the group before installing, install, upgrade and purge
# leave it there; where the package made it, the preinst has made it
# before the rule is unpacked, and purge takes it away.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DEBIAN=$HERE/../../packaging/debian
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-group-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_group_ownership: FAIL: $*" >&2; exit 1; }

# The scripts as dpkg runs them, with the group commands answered from
# $WORK/groups, one name a line; $1: with or without systemd-sysusers.
run_script() {
	sysusers=$1 script=$2
	shift 2
	cat > "$WORK/run.sh" <<STUB
getent() { grep -qx "\$2" "$WORK/groups"; }
groupadd() { echo "\$2" >> "$WORK/groups"; }
groupdel() { grep -vx "\$1" "$WORK/groups" > "$WORK/groups.new" || true; mv "$WORK/groups.new" "$WORK/groups"; }
systemd_sysusers() { getent group gdrhook || groupadd --system gdrhook; }
command() { [ "\$2" = systemd-sysusers ] && [ $sysusers = yes ]; }
alias systemd-sysusers=systemd_sysusers
STUB
	# What dpkg has unpacked into the root by then: the scripts' shared
	# part (kmod/packaging/running-kernel.sh).
	mkdir -p "$WORK/root/usr/lib/gdrhook-dkms"
	cp "$HERE/../../kmod/packaging/running-kernel.sh" "$WORK/root/usr/lib/gdrhook-dkms/"
	sed 's/^set -e$/set -e; . "$STUBS"/' "$DEBIAN/$script" > "$WORK/script.sh"
	STUBS=$WORK/run.sh DPKG_ROOT=$WORK/root sh "$WORK/script.sh" "$@"
}
has_group() { grep -qx gdrhook "$WORK/groups"; }

for sysusers in yes no; do
	rm -rf "$WORK/root" && mkdir -p "$WORK/root"
	# The admin's own group, made before the package came.
	echo gdrhook > "$WORK/groups"
	run_script $sysusers gdrhook-dkms.preinst install
	run_script $sysusers gdrhook-dkms.postinst configure
	run_script $sysusers gdrhook-dkms.postinst configure 1.0 # an upgrade
	run_script $sysusers gdrhook-dkms.postrm remove
	run_script $sysusers gdrhook-dkms.postrm purge
	has_group || fail "purge (sysusers: $sysusers) deleted the group the admin had made"

	# The package's own group.
	rm -rf "$WORK/root" && mkdir -p "$WORK/root"
	: > "$WORK/groups"
	# dpkg's order: the preinst, then the files (the udev rule, which
	# udevd may read at once: the group must exist by then), then the
	# postinst (issue 41; tests/vm/guest/packaged_load.sh, step 3).
	run_script $sysusers gdrhook-dkms.preinst install
	has_group || fail "the preinst (sysusers: $sysusers) made no group before the rule is unpacked"
	run_script $sysusers gdrhook-dkms.postinst configure
	has_group || fail "install (sysusers: $sysusers) made no group"
	run_script $sysusers gdrhook-dkms.postinst configure 1.0
	run_script $sysusers gdrhook-dkms.postrm remove
	has_group || fail "remove (sysusers: $sysusers) took the group before purge"
	run_script $sysusers gdrhook-dkms.postrm purge
	has_group && fail "purge (sysusers: $sysusers) left the group the package had made"
done
echo "test_group_ownership: the admin's group kept, the package's removed on purge"
