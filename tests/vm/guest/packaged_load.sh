#!/bin/busybox sh
# packaged_load.sh - gdrhook.ko loaded in the guest as the machine the
# packages were installed on loads it (tests/install/clean_root.sh: the
# root is shared read-only over 9p and the commands are that root's own,
# run in it with chroot):
#  1. boot: systemd-modules-load reads the packaged modules-load.d file and
#     loads the module DKMS installed; systemd-udevd and a coldplug trigger
#     apply the packaged udev rule: /dev/gdrhook is group gdrhook's, 0660;
#     a member of the group opens it, a user outside it is refused (EACCES);
#  2. removal: the installed prerm (gdrhook-dkms's, without its dh_dkms
#     part: DKMS ran on the host) unloads the module;
#  3. install: the installed postinst (likewise) loads it again, and udev
#     gives the new node to the group again.
# The in-guest tests that follow run with the module loaded this way.
# Each check prints "packaged: ..."; exit status 0 only when all held.
S=/sysroot
say() { echo "packaged: $*"; }
bad() { say "FAIL: $*"; exit 1; }
# SYSTEMD_IGNORE_CHROOT=1: systemd's tools (udevadm trigger and control)
# ignore requests when they find themselves in a chroot; this one stands
# for the machine's root. (Untested: the one run without it found the
# node root's after the trigger.)
in_root() { chroot $S /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_IGNORE_CHROOT=1 "$@"; }
loaded() { [ -e /sys/module/gdrhook ]; }
node_is() { # what /dev/gdrhook must be: group gdrhook, 0660
	in_root udevadm settle --timeout=30
	got=$(in_root stat -c '%G %a' /dev/gdrhook 2>&1)
	[ "$got" = "gdrhook 660" ] || bad "$1: /dev/gdrhook is '$got', not 'gdrhook 660'"
	say "$1: /dev/gdrhook gdrhook 660"
}
opens() { # user: opens /dev/gdrhook read-write as USER with USER's groups
	in_root setpriv --reuid="$1" --regid="$1" --init-groups sh -c 'exec 3<>/dev/gdrhook' 2>&1
}
access_is_the_groups() {
	out=$(opens gdrhook-member) || bad "a member of group gdrhook could not open /dev/gdrhook: $out"
	say "a member of group gdrhook opens /dev/gdrhook"
	if out=$(opens gdrhook-outsider); then
		bad "a user outside group gdrhook opened /dev/gdrhook"
	fi
	case $out in
	*"Permission denied"*) say "a user outside group gdrhook is refused: $out" ;;
	*) bad "a user outside group gdrhook failed otherwise than EACCES: $out" ;;
	esac
}
# The installed maintainer script, without what dh_dkms added (DKMS's
# build and removal, done on the host).
maintainer_script() { # script args...
	in_root sh -c "sed '/^# Automatically added by dh_dkms/,/^# End automatically added section/d' \
		/var/lib/dpkg/info/gdrhook-dkms.$1 >/tmp/gdrhook-dkms.$1 && sh /tmp/gdrhook-dkms.$1 $2"
}

mkdir -p $S
mount -t 9p -o trans=virtio,version=9p2000.L,ro sysroot $S || bad "mounting the installed root (9p)"
mount -t proc proc $S/proc && mount -t sysfs sysfs $S/sys && mount -t devtmpfs devtmpfs $S/dev &&
	mount -t tmpfs tmpfs $S/run && mount -t tmpfs tmpfs $S/tmp || bad "mounting /proc, /sys, /dev, /run, /tmp in it"

# 1. Boot.
loaded && bad "gdrhook.ko loaded before systemd-modules-load"
in_root /lib/systemd/systemd-modules-load || bad "systemd-modules-load failed"
loaded || bad "systemd-modules-load did not load gdrhook.ko (modules-load.d)"
say "boot: systemd-modules-load loaded $(cat /sys/module/gdrhook/srcversion 2>/dev/null) from $(in_root modinfo -n gdrhook)"
in_root /lib/systemd/systemd-udevd --daemon || bad "systemd-udevd did not start"
in_root udevadm trigger --action=add --subsystem-match=misc
node_is boot
access_is_the_groups

# 2. Removal: the prerm unloads the module.
maintainer_script prerm remove || bad "the prerm failed"
loaded && bad "the prerm left gdrhook.ko loaded"
say "prerm remove: gdrhook.ko unloaded"

# 3. Install: the postinst loads it, udev gives the node to the group.
maintainer_script postinst configure || bad "the postinst failed"
loaded || bad "the postinst did not load gdrhook.ko"
node_is "postinst configure"
access_is_the_groups
say PASS
