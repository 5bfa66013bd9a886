#!/bin/sh
# find-kdir.sh: print the kernel build tree gdrhook.ko is built against.
#
# The running kernel's tree if it is installed; otherwise the newest
# Debian linux-headers-*-amd64 tree that has a matching /boot/vmlinuz-*
# (what the VM test boots). Prints nothing and exits 1 when there is none.
r=/lib/modules/$(uname -r)/build
if [ -f "$r/Makefile" ]; then
	echo "$r"
	exit 0
fi
for v in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -rV); do
	for d in "/usr/src/linux-headers-$v" "/lib/modules/$v/build"; do
		if [ -f "$d/Makefile" ]; then
			echo "$d"
			exit 0
		fi
	done
done
exit 1
