#!/bin/busybox sh
# init.sh - PID 1 of the VM test's initramfs.
#
# Loads vgem (with its dependencies), the test provider and gdrhook.ko,
# runs each in-guest test, unloads everything (an unload failure means a
# leak: gdrhook held by an open file, vgem by a dma-buf reference), prints
# the kernel log, and ends with exactly one "GDRHOOK-VM: PASS" or
# "GDRHOOK-VM: FAIL" line, which is what the host decides by.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
mount -t debugfs debugfs /sys/kernel/debug
export PATH=/bin

RESULT=PASS
SKIPPED=
T0=$(cut -d' ' -f1 /proc/uptime)

say() { echo "GDRHOOK-VM: $*"; }
failed() { say "step failed: $*"; RESULT=FAIL; }
# step NAME COMMAND...: runs COMMAND unless an earlier step failed. Exit
# status 77 means the step was skipped (what it needs is absent): reported,
# never counted as a pass.
step() {
	name=$1
	shift
	[ "$RESULT" = PASS ] || return 0
	t=$(cut -d' ' -f1 /proc/uptime)
	say "step $name"
	"$@"
	rc=$?
	if [ $rc = 77 ]; then
		say "step skipped: $name"
		SKIPPED="$SKIPPED $name"
	elif [ $rc != 0 ]; then
		failed "$name"
	fi
	say "step $name took $(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $t }") s"
}

load_modules() {
	for m in $(cat /modules/load_order); do
		insmod "/modules/$m" || return 1
	done
	insmod /modules/gdrhook_tp.ko && insmod /modules/gdrhook.ko
}

# kill -9 left nothing: the module must now unload.
unload_modules() {
	rmmod gdrhook || return 1
	rmmod gdrhook_tp || return 1
	rmmod vgem || return 1
}

say "guest up: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
step load load_modules
step basic /bin/gdrhook-vmtest basic
step backend /bin/gdrhook-vmtest backend
step pipeline /bin/gdrhook-vmtest pipeline
step bad_input /bin/gdrhook-vmtest bad_input
step races /bin/gdrhook-vmtest races
step fuzz /bin/gdrhook-vmtest fuzz
step kill /bin/gdrhook-vmtest kill
step unload unload_modules

say "in-guest time $(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $T0 }") s"
echo "----- dmesg -----"
dmesg
echo "----- end of dmesg -----"
[ -z "$SKIPPED" ] || say "skipped:$SKIPPED"
say "$RESULT"
sync
poweroff -f
