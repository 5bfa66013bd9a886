#!/bin/busybox sh
# packaged_load.sh - gdrhook.ko loaded in the guest as the machine the
# packages were installed on loads it (tests/install/clean_root.sh: the
# root is shared read-only over 9p, made writable by an overlay in memory,
# and the commands are that root's own, run in it with chroot):
#  1. boot: systemd-modules-load reads the packaged modules-load.d file and
#     loads the module DKMS installed; systemd-udevd and a coldplug trigger
#     apply the packaged udev rule: /dev/gdrhook is 0666 (group gdrhook's,
#     which a site that restricts it makes 0660): a member of the group and
#     a user outside it open it, as any user opens /dev/infiniband/uverbs*
#     (its locked-memory limit bounds what it pins); modinfo says the
#     package's version;
#  2. removal: the installed prerm (gdrhook-dkms's, without its dh_dkms
#     part: DKMS ran on the host) unloads the module;
#  3. purge and install again on the running machine, in dpkg's order:
#     the installed postrm purge takes the group away; the preinst (where
#     there is one) runs; the rule is unpacked again and an event makes
#     udevd read it; the installed postinst loads the module: udev must
#     give the new node to the (new) group.
# The in-guest tests that follow run with the module loaded this way.
# Each check prints "packaged: ..."; exit status 0 only when all held.
S=/sysroot
say() { echo "packaged: $*"; }
bad() {
	# What udevd said (--debug, below) about the node, its rules and
	# groups, for the report.
	[ ! -s $S/run/udevd.log ] || grep -i -e gdrhook -e group -e rules -e reload -e chroot -e fail \
		$S/run/udevd.log | tail -n 40 | sed 's/^/packaged: udevd: /'
	say "FAIL: $*"
	exit 1
}
# SYSTEMD_IGNORE_CHROOT=1: systemd's udevadm (trigger, settle, control)
# answers "Running in chroot, ignoring request.", does nothing and exits 0
# when its root is not PID 1's, as here; this chroot stands for the
# machine's root.
# Without it the rule was never applied (/dev/gdrhook stayed devtmpfs's
# root 0660).
in_root() { chroot $S /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_IGNORE_CHROOT=1 "$@"; }
loaded() { [ -e /sys/module/gdrhook ]; }
node_is() { # what /dev/gdrhook must be: group gdrhook, 0666
	in_root udevadm settle --timeout=30
	got=$(in_root stat -c '%G %a' /dev/gdrhook 2>&1)
	[ "$got" = "gdrhook 666" ] || bad "$1: /dev/gdrhook is '$got', not 'gdrhook 666'"
	say "$1: /dev/gdrhook gdrhook 666"
}
opens() { # user: opens /dev/gdrhook read-write as USER with USER's groups
	in_root setpriv --reuid="$1" --regid="$1" --init-groups sh -c 'exec 3<>/dev/gdrhook' 2>&1
}
access_is_everyones() {
	out=$(opens gdrhook-member) || bad "a member of group gdrhook could not open /dev/gdrhook: $out"
	say "a member of group gdrhook opens /dev/gdrhook"
	out=$(opens gdrhook-outsider) || bad "a user outside group gdrhook could not open /dev/gdrhook: $out"
	say "a user outside group gdrhook opens /dev/gdrhook"
}
# The installed maintainer script, without what dh_dkms added (DKMS's
# build and removal, done on the host).
maintainer_script() { # script args...
	in_root sh -c "sed '/^# Automatically added by dh_dkms/,/^# End automatically added section/d' \
		/var/lib/dpkg/info/gdrhook-dkms.$1 >/tmp/gdrhook-dkms.$1 && sh /tmp/gdrhook-dkms.$1 $2"
}

# Read-only over 9p (the host's copy stays as installed), writable here:
# the postrm and postinst change /etc/group.
mkdir -p $S /lower /rw
mount -t 9p -o trans=virtio,version=9p2000.L,ro sysroot /lower || bad "mounting the installed root (9p)"
mount -t tmpfs tmpfs /rw && mkdir /rw/upper /rw/work &&
	mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work $S ||
	bad "an overlay over the installed root"
mount -t proc proc $S/proc && mount -t sysfs sysfs $S/sys && mount -t devtmpfs devtmpfs $S/dev &&
	mount -t tmpfs tmpfs $S/run && mount -t tmpfs tmpfs $S/tmp || bad "mounting /proc, /sys, /dev, /run, /tmp in it"

# 1. Boot.
loaded && bad "gdrhook.ko loaded before systemd-modules-load"
in_root /lib/systemd/systemd-modules-load || bad "systemd-modules-load failed"
loaded || bad "systemd-modules-load did not load gdrhook.ko (modules-load.d)"
say "boot: systemd-modules-load loaded $(cat /sys/module/gdrhook/srcversion 2>/dev/null) from $(in_root modinfo -n gdrhook)"
# udevd in the background rather than --daemon: its log (--debug) is
# kept for a failure's report.
in_root /lib/systemd/systemd-udevd --debug >$S/run/udevd.log 2>&1 &
# Its control socket appears once it has read its rules (seconds, emulated).
tries=0
until in_root udevadm control --ping 2>/dev/null; do
	tries=$((tries + 1))
	[ $tries -lt 120 ] || bad "systemd-udevd did not answer within 60 s"
	sleep 0.5
done
in_root udevadm trigger --action=add --subsystem-match=misc || bad "udevadm trigger failed"
node_is boot
access_is_everyones
# The package's version without its Debian revision: DKMS's PACKAGE_VERSION.
version=$(in_root dpkg-query -W -f '${Version}' gdrhook-dkms)
version=${version%-*}
got=$(in_root modinfo -F version gdrhook)
[ "$got" = "$version" ] || bad "modinfo says version '$got', the package '$version'"
say "boot: modinfo says the package's version, $got"

# 2. Removal: the prerm unloads the module.
maintainer_script prerm remove || bad "the prerm failed"
loaded && bad "the prerm left gdrhook.ko loaded"
say "prerm remove: gdrhook.ko unloaded"

# 3. Purge, then install again on the running machine, in dpkg's order:
# the preinst (where the package has one), the files unpacked, then the
# postinst. udevd reads its rules again at its first event 3 s or more
# after their folder changed, and resolves GROUP='s name then: a rule
# naming a group that does not exist yet is dropped, and `udevadm control
# --reload` does not read unchanged rules again (systemd 252), so the
# postinst's reload cannot mend it. Here an event comes between the
# unpacking and the postinst, as on a node where anything sends one while
# apt runs (another package's trigger, a link, a disk).
maintainer_script postrm purge || bad "the postrm failed"
in_root getent group gdrhook >/dev/null && bad "the postrm purge left group gdrhook"
if [ -e $S/var/lib/dpkg/info/gdrhook-dkms.preinst ]; then
	maintainer_script preinst install || bad "the preinst failed"
fi
rules=/lib/udev/rules.d/70-gdrhook.rules
in_root sh -c "cp -p $rules $rules.dpkg-new && mv $rules.dpkg-new $rules" || bad "unpacking the rule"
sleep 4
in_root udevadm trigger --action=change --subsystem-match=misc || bad "udevadm trigger failed"
in_root udevadm settle --timeout=30
grep -q "rules need reloading" $S/run/udevd.log || bad "udevd did not read its rules again after the unpacking"
say "unpacked: udevd read the rule again, group gdrhook $(in_root getent group gdrhook >/dev/null && echo present || echo missing)"
maintainer_script postinst configure || bad "the postinst failed"
loaded || bad "the postinst did not load gdrhook.ko"
# The group is new: its members are added again, as an admin would.
in_root usermod --append --groups gdrhook gdrhook-member || bad "usermod"
node_is "postinst configure"
access_is_everyones
say PASS
