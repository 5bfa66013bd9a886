#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The module's packages load it at install and unload it at removal, as
# gdrcopy's do, with the group made before the udev rule can apply (issue
# 41): the Debian maintainer scripts (packaging/debian/gdrhook-dkms.postinst,
# .prerm) and the RPM scriptlets (packaging/rpm/gdrhook.spec, %pre, %post,
# %preun, %postun of the dkms package) run with the commands they call
# (getent, groupadd, systemd-sysusers, dkms, modprobe, udevadm) answered by
# shell functions that log each call, and the order of the calls checked:
# the group first, then DKMS, then udev's rules reloaded, then modprobe,
# then the trigger; on removal modprobe -r before DKMS removes the module;
# a kernel the module is not built for, or a module in use, is not an
# error; a failed DKMS build of the RPM's is; in a chroot (a node image
# being built: ischroot, or systemd-detect-virt where there is no ischroot)
# DKMS builds but neither format touches the running kernel, the build
# host's; nor under `dpkg --root`. clean_root.sh runs the real thing in a chroot and in a VM
# (tests/install).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PKG=$HERE/../../packaging
RUNNING_KERNEL=$HERE/../../kmod/packaging/running-kernel.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-modscripts-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
	echo "test_module_scripts: FAIL: $*" >&2
	sed 's/^/  call: /' "$WORK/calls" >&2
	exit 1
}

cat >"$WORK/stubs.sh" <<STUB
log() { echo "\$*" >>"$WORK/calls"; }
getent() { grep -qx "\$2" "$WORK/groups"; }
groupadd() { log group-created; echo gdrhook >>"$WORK/groups"; }
systemd_sysusers() { log group-created; echo gdrhook >>"$WORK/groups"; }
alias systemd-sysusers=systemd_sysusers
groupdel() { log groupdel; : >"$WORK/groups"; }
command() { [ "\$2" != ischroot ] || [ ! -e "$WORK/no-ischroot" ]; }
ischroot() { [ -e "$WORK/chroot" ]; }
systemd_detect_virt() {
	[ ! -e "$WORK/cannot-tell" ] || { echo "Failed to check for chroot() environment: Permission denied" >&2; return 1; }
	[ -e "$WORK/chroot" ]
}
alias systemd-detect-virt=systemd_detect_virt
uname() { echo 6.1.0-test; }
dkms() { log "dkms \$*"; [ "\$1 \${7:-}" != "install \$(cat "$WORK/dkms-fails" 2>/dev/null)" ] || return \$(cat "$WORK/dkms-rc"); }
modprobe() {
	log "modprobe \$*"
	rc=\$(cat "$WORK/modprobe-rc")
	[ "\$rc" = 0 ] || echo "modprobe: ERROR: could not insert 'gdrhook': Exec format error" >&2
	return \$rc
}
modinfo() { [ ! -e "$WORK/no-module" ]; }
udevadm() { log "udevadm \$*"; }
STUB
# A fresh machine: no group, modprobe works, the kernels k1 and k2 have
# headers, k3 has none.
reset() {
	: >"$WORK/calls"
	: >"$WORK/groups"
	echo 0 >"$WORK/modprobe-rc"
	rm -f "$WORK/dkms-fails" "$WORK/chroot" "$WORK/no-ischroot" "$WORK/no-module" "$WORK/cannot-tell" "$WORK/var"/gdrhook-dkms/* 2>/dev/null || true
	rm -rf "$WORK/modules" && mkdir -p "$WORK/modules/k1/build" "$WORK/modules/k2/build" "$WORK/modules/k3"
}
# Debian: the script with debhelper's part (#DEBHELPER#, dh_dkms) a logged
# call, run as dpkg runs it.
deb() { # script args...
	script=$1
	shift
	sed -e 's/^set -e$/set -e; . "$STUBS"/' -e 's/^#DEBHELPER#$/log "dkms debhelper"/' \
		-e "s|/usr/lib/gdrhook-dkms/running-kernel.sh|$RUNNING_KERNEL|" \
		"$PKG/debian/gdrhook-dkms.$script" >"$WORK/script.sh"
	STUBS=$WORK/stubs.sh sh "$WORK/script.sh" "$@" 2>"$WORK/stderr"
}
# RPM: one scriptlet of the dkms package with rpm's macros expanded and
# /lib/modules the test's, run as rpm runs it (sh, $1 the count of
# installed instances after the operation).
rpm_scriptlet() { # section count
	awk -v sec="%$1 dkms" '$0 == sec { on = 1; next } on && /^%[a-z]/ { exit } on' "$PKG/rpm/gdrhook.spec" |
		sed -e 's/%{name}/gdrhook/g' -e 's/%{version}/1.0/g' -e "s|%{_localstatedir}|$WORK/var|g" \
			-e "s|%{_prefix}/lib/gdrhook-dkms/running-kernel.sh|$RUNNING_KERNEL|" \
			-e "s|/lib/modules/|$WORK/modules/|g" >"$WORK/script.sh"
	(set +eu && set -- "$2" && . "$WORK/stubs.sh" && . "$WORK/script.sh") 2>"$WORK/stderr"
}
at() { grep -n -m1 -e "$1" "$WORK/calls" | cut -d: -f1; } # line of the first call matching $1
before() { # A B: A was called, then B
	a=$(at "$1") b=$(at "$2")
	[ -n "$a" ] || fail "$3: no call of $1"
	[ -n "$b" ] || fail "$3: no call of $2"
	[ "$a" -lt "$b" ] || fail "$3: $1 after $2"
}
never() { ! grep -q -e "$1" "$WORK/calls" || fail "$2: $1 called"; }

# Debian, postinst configure.
reset
deb postinst configure || fail "postinst configure failed"
before group-created "dkms debhelper" "postinst: the group before DKMS"
before group-created "^modprobe gdrhook" "postinst: the group before the module's node appears"
before "dkms debhelper" "^modprobe gdrhook" "postinst: DKMS before modprobe"
before "udevadm control --reload-rules" "^modprobe gdrhook" "postinst: udev's rules read before the node appears"
before "^modprobe gdrhook" "udevadm trigger.*sysname-match=gdrhook" "postinst: the rule applied to the node"
reset
echo 1 >"$WORK/modprobe-rc"
deb postinst configure || fail "postinst failed where the module does not load"
grep -q "^gdrhook-dkms: gdrhook.ko not loaded .*Exec format error" "$WORK/stderr" ||
	fail "postinst did not say, in its words with modprobe's reason, that the module was not loaded"
grep -q "^modprobe" "$WORK/stderr" && fail "postinst let modprobe's own message through first"
# The commonest packaged case: a kernel booted without its headers, for
# which DKMS built nothing. Said plainly, modprobe not run (its "FATAL:
# Module gdrhook not found" read like a failed install).
reset
: >"$WORK/no-module"
deb postinst configure || fail "postinst failed where the running kernel has no module"
never "^modprobe" "postinst where the running kernel has no module"
[ "$(head -c 13 "$WORK/stderr")" = "gdrhook-dkms:" ] || fail "postinst's first word on a kernel without the module is not its own"
grep -q "has no gdrhook.ko" "$WORK/stderr" || fail "postinst did not say the running kernel has no module"
# Debian, prerm.
for op in remove upgrade; do
	reset
	deb prerm $op || fail "prerm $op failed"
	before "^modprobe -r gdrhook" "dkms debhelper" "prerm $op: the module unloaded before DKMS removes it"
	echo 1 >"$WORK/modprobe-rc"
	deb prerm $op || fail "prerm $op failed where the module could not be unloaded"
done
reset
deb prerm failed-upgrade
never "^modprobe" "prerm failed-upgrade"

# RPM, install then erase.
reset
rpm_scriptlet pre 1
[ -n "$(at group-created)" ] || fail "%pre made no group"
rpm_scriptlet post 1 || fail "%post failed"
before "dkms add" "dkms install -m gdrhook -v 1.0 -k k1" "%post: DKMS"
before "dkms install -m gdrhook -v 1.0 -k k1" "^modprobe gdrhook" "%post: k1 built before modprobe"
before "dkms install -m gdrhook -v 1.0 -k k2" "^modprobe gdrhook" "%post: k2 built before modprobe"
never "k3" "%post: a kernel without headers"
before "udevadm control --reload-rules" "^modprobe gdrhook" "%post: udev's rules read before the node appears"
before "^modprobe gdrhook" "udevadm trigger.*sysname-match=gdrhook" "%post: the rule applied to the node"
never "^modprobe -r" "%post of an install"
: >"$WORK/calls"
rpm_scriptlet preun 0
before "^modprobe -r gdrhook" "dkms remove" "%preun of an erase: the module unloaded before DKMS removes it"
rpm_scriptlet postun 1
[ -s "$WORK/groups" ] || fail "%postun of an upgrade deleted the group"
rpm_scriptlet postun 0
[ -s "$WORK/groups" ] && fail "%postun of an erase left the group the package made"
# RPM, an upgrade: the new %post swaps the module, the old %preun leaves it.
reset
echo gdrhook >"$WORK/groups" # the admin's
rpm_scriptlet pre 2
rpm_scriptlet post 2 || fail "%post of an upgrade failed"
before "^modprobe -r gdrhook" "^modprobe gdrhook" "%post of an upgrade: the old module out first"
: >"$WORK/calls"
rpm_scriptlet preun 1
never "^modprobe -r" "%preun of an upgrade (the new module is loaded)"
rpm_scriptlet postun 0
[ -s "$WORK/groups" ] || fail "%postun of an erase deleted the admin's group"
# RPM, DKMS failures: a build that fails is shown and fails %post; a kernel
# dkms.conf excludes (77) is skipped.
reset
echo k2 >"$WORK/dkms-fails"
echo 1 >"$WORK/dkms-rc"
if rpm_scriptlet post 1; then fail "%post succeeded though DKMS failed for k2"; fi
grep -q "DKMS failed for kernel k2" "$WORK/stderr" || fail "%post did not name the kernel DKMS failed for"
reset
echo k2 >"$WORK/dkms-fails"
echo 77 >"$WORK/dkms-rc"
rpm_scriptlet post 1 || fail "%post failed for a kernel dkms.conf excludes"
reset
echo 1 >"$WORK/modprobe-rc"
rpm_scriptlet post 1 || fail "%post failed where the running kernel has no module"
# A node image built in a chroot: DKMS builds for the image's kernels, the
# running kernel (the build host's) is neither loaded into nor unloaded,
# and the postinst says why; with ischroot (Debian) and without it (RPM
# distributions: systemd-detect-virt --chroot).
for detector in ischroot systemd-detect-virt; do
	reset
	: >"$WORK/chroot"
	[ $detector = ischroot ] || : >"$WORK/no-ischroot"
	deb postinst configure || fail "postinst in a chroot failed ($detector)"
	[ -n "$(at "dkms debhelper")" ] || fail "postinst in a chroot: no DKMS build ($detector)"
	never "^modprobe" "postinst in a chroot ($detector)"
	never "^udevadm" "postinst in a chroot ($detector)"
	grep -q "installed in a chroot: the running kernel .* is left alone" "$WORK/stderr" ||
		fail "postinst in a chroot did not say it left the running kernel alone ($detector)"
	deb prerm remove || fail "prerm in a chroot failed ($detector)"
	never "^modprobe" "prerm remove in a chroot ($detector)"
	rpm_scriptlet post 2 || fail "%post of an upgrade in a chroot failed ($detector)"
	[ -n "$(at "dkms install -m gdrhook -v 1.0 -k k1")" ] || fail "%post in a chroot: no DKMS build ($detector)"
	rpm_scriptlet preun 0
	never "^modprobe" "%post and %preun in a chroot ($detector)"
	never "^udevadm" "%post in a chroot ($detector)"
done
# `dpkg --root DIR` (DPKG_ROOT) installs into another root from a machine
# that is no chroot: the running kernel is this machine's, not the root's,
# so neither the postinst nor the prerm touches it, and the postinst says
# why. The maintainer scripts source running-kernel.sh from inside the root.
reset
mkdir -p "$WORK/root$(dirname "$RUNNING_KERNEL")"
cp "$RUNNING_KERNEL" "$WORK/root$RUNNING_KERNEL"
DPKG_ROOT=$WORK/root deb postinst configure || fail "postinst under dpkg --root failed"
[ -n "$(at "dkms debhelper")" ] || fail "postinst under dpkg --root: no DKMS build"
never "^modprobe" "postinst under dpkg --root"
never "^udevadm" "postinst under dpkg --root"
grep -q "installed in dpkg --root $WORK/root: the running kernel .* is left alone" "$WORK/stderr" ||
	fail "postinst under dpkg --root did not say it left the running kernel alone"
for op in remove upgrade; do
	DPKG_ROOT=$WORK/root deb prerm $op || fail "prerm $op under dpkg --root failed"
	never "^modprobe" "prerm $op under dpkg --root"
done
# systemd-detect-virt, where it cannot tell (no /proc in the root, or
# none of PID 1's to see), is taken as a chroot: the kernel is left alone.
reset
: >"$WORK/no-ischroot"
: >"$WORK/cannot-tell"
rpm_scriptlet post 1 || fail "%post where systemd-detect-virt cannot tell failed"
never "^modprobe" "%post where systemd-detect-virt cannot tell"
grep -q "cannot place (Failed to check" "$WORK/stderr" ||
	fail "%post did not say why it left the running kernel alone"
# Outside a chroot, without ischroot: the module is loaded.
reset
: >"$WORK/no-ischroot"
rpm_scriptlet post 1 || fail "%post outside a chroot without ischroot failed"
[ -n "$(at "^modprobe gdrhook")" ] || fail "%post outside a chroot without ischroot did not load the module"
# A chroot that stands for the machine (systemd's SYSTEMD_IGNORE_CHROOT, as
# the VM test runs the installed scripts) is the machine.
reset
: >"$WORK/chroot"
SYSTEMD_IGNORE_CHROOT=1 deb postinst configure || fail "postinst with SYSTEMD_IGNORE_CHROOT failed"
[ -n "$(at "^modprobe gdrhook")" ] || fail "postinst with SYSTEMD_IGNORE_CHROOT did not load the module"
echo "test_module_scripts: load at install after the group, unload before removal, DKMS for every kernel, failures shown, a chroot's host kernel left alone (deb and rpm)"
