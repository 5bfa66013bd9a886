# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# What gdrhook-dkms does to the running kernel, written once and sourced
# by the maintainer scripts of both package formats (Debian's postinst and
# prerm, the RPM's %post and %preun), installed as
# /usr/lib/gdrhook-dkms/running-kernel.sh.
#
# The running kernel is the package's to change only when the package is
# installed on the machine that runs it. Not under `dpkg --root`, and not
# in a chroot: a cluster's node image is built in one (Warewulf, xCAT,
# mkosi), where the running kernel is the build host's. Loading the
# image's module into it, or unloading the host's own gdrhook.ko when the
# image drops the package, would change a machine nobody asked to change;
# a node loads the module when it boots the image (modules-load.d). A
# chroot that stands for the machine says so with SYSTEMD_IGNORE_CHROOT,
# systemd's own variable for it (udevadm reads it too).

# Prints where the package is installed when that is not the machine
# whose kernel runs; false when it is that machine.
gdrhook_kernel_elsewhere() {
	if [ -n "${DPKG_ROOT:-}" ]; then
		echo "dpkg --root $DPKG_ROOT"
		return 0
	fi
	[ -z "${SYSTEMD_IGNORE_CHROOT:-}" ] || return 1
	# Where neither can tell (no /proc: a running machine has one, a bare
	# chroot often has none), the kernel is left alone: loading it is
	# the step that cannot be taken back.
	if command -v ischroot >/dev/null 2>&1; then
		# Debian's debianutils: 0 a chroot, 1 not, 2 cannot tell.
		ischroot --default-true || return 1
		echo "a chroot"
	elif why=$(systemd-detect-virt --chroot 2>&1); then
		echo "a chroot"
	elif [ -n "$why" ]; then
		# Not a chroot is a bare exit 1; one it cannot tell says why.
		echo "a root systemd-detect-virt cannot place ($why)"
	else
		return 1
	fi
}

# Loads the module into the running kernel (`replace`: a loaded older
# version out first, for the RPM's upgrade), udev's rules read before the
# node appears and applied after, so that /dev/gdrhook is the group's
# from its first appearance. A kernel the module was not built for (no
# headers, older than 5.8) is said and is not an error: the module loads
# at boot of a kernel DKMS built it for.
gdrhook_load_module() { # [replace]
	if where=$(gdrhook_kernel_elsewhere); then
		echo "gdrhook-dkms: installed in $where: the running kernel $(uname -r) is left" \
			"alone; gdrhook.ko loads when a machine boots this root (modules-load.d)" >&2
		return 0
	fi
	# A running kernel without the module (booted without its headers, so
	# DKMS could not build for it) is said in our words first, not as
	# modprobe's "FATAL" that reads like a failed install.
	if ! modinfo gdrhook >/dev/null 2>&1; then
		echo "gdrhook-dkms: the running kernel $(uname -r) has no gdrhook.ko (DKMS builds it" \
			"where a kernel's headers are installed; gdrhook doctor says what is missing); it" \
			"loads at boot of a kernel DKMS built it for (dkms status gdrhook)" >&2
		return 0
	fi
	udevadm control --reload-rules >/dev/null 2>&1 || :
	if [ "${1:-}" = replace ]; then
		modprobe -r gdrhook 2>/dev/null || :
	fi
	if why=$(modprobe gdrhook 2>&1); then
		udevadm trigger --action=add --subsystem-match=misc --sysname-match=gdrhook >/dev/null 2>&1 || :
	else
		echo "gdrhook-dkms: gdrhook.ko not loaded into the running kernel $(uname -r) ($why);" \
			"it loads at the next boot (dkms status gdrhook)" >&2
	fi
}

# Unloads the module before DKMS removes it. A module in use (a program
# holds /dev/gdrhook open) stays loaded, said and not an error: removing
# the package must not fail for it; it goes at the next reboot.
gdrhook_unload_module() {
	! gdrhook_kernel_elsewhere >/dev/null || return 0
	# modprobe -r of a module that is not loaded succeeds.
	if ! modprobe -r gdrhook 2>/dev/null && [ -e /sys/module/gdrhook ]; then
		echo "gdrhook-dkms: gdrhook.ko is in use and stays loaded until the next reboot" >&2
	fi
}
