#!/bin/busybox sh
# init.sh - PID 1 of the VM test's initramfs.
#
# Loads vgem (with its dependencies), the test provider, the test exporter
# and gdrhook.ko, runs each in-guest test, unloads everything, then loads
# the Tegra flavour of gdrhook.ko and its provider for the Tegra steps and
# unloads them (an unload
# failure means a leak: gdrhook held by an open file, vgem or the test
# exporter by a dma-buf reference), prints
# the kernel log, and ends with "GDRHOOK-VM: N passed, M failed" and exactly
# one "GDRHOOK-VM: PASS" or "GDRHOOK-VM: FAIL" line, which is what the host
# decides by. Every test runs even when an earlier one failed (each is
# independent and re-checks the leak counters it needs); a test that exits
# with any status other than 0, 77 (skip) included, has failed.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
mount -t debugfs debugfs /sys/kernel/debug
export PATH=/bin

# The tests, in order; GDRHOOKTEST_VM_STEPS (from /env) may name a subset.
STEPS="basic backend pipeline bad_input pin_vs_callback callback_teardown opener_only errnos bad_table access slurm provider_life move_notify host_pages pin_limits memlock_user integrated races fuzz kill node"
# The access model under Slurm, where run.sh packed one (amd64's).
[ -x /usr/sbin/slurmd ] || STEPS=$(echo "$STEPS" | sed 's/ slurm / /')
# Slurm's daemons talk over TCP: the suite's debug kernel (tinyconfig) has
# no network stack, and leaves the step out, saying so (not a pass).
if [ ! -d /proc/sys/net/ipv4 ] && echo " $STEPS " | grep -q ' slurm '; then
	echo "GDRHOOK-VM: step slurm left out: this kernel has no IPv4 stack"
	STEPS=$(echo "$STEPS" | sed 's/ slurm / /')
fi
# Allocation failures in turn, where the kernel has fault injection (the
# suite's debug kernel); the host's result line names the kernel.
[ -e /proc/self/fail-nth ] && STEPS="$STEPS failslab"
# Then, in the same boot, the desktop modules unloaded: gdrhook.ko built for
# Tegra's nvidia_p2p_* with the Tegra test provider (/modules/tegra/, run.sh's
# second build), for the steps that test that flavour.
TEGRA_STEPS="tegra tegra_bad_table"

PASSED=0
FAILED=0
FAILED_NAMES=
T0=$(cut -d' ' -f1 /proc/uptime)

say() { echo "GDRHOOK-VM: $*"; }
# step NAME COMMAND...: runs COMMAND and counts it passed (exit 0) or failed.
step() {
	name=$1
	shift
	t=$(cut -d' ' -f1 /proc/uptime)
	say "step $name"
	"$@"
	rc=$?
	if [ $rc = 0 ]; then
		PASSED=$((PASSED + 1))
	else
		say "step failed: $name (exit $rc)"
		FAILED=$((FAILED + 1))
		FAILED_NAMES="$FAILED_NAMES $name"
	fi
	say "step $name took $(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $t }") s"
	return $rc
}

load_modules() {
	for m in $(cat /modules/load_order); do
		insmod "/modules/$m" || return 1
	done
	insmod /modules/gdrhook_tp.ko && insmod /modules/gdrhook_te.ko || return 1
	# A root with the packages installed (tests/install/clean_root.sh):
	# gdrhook.ko as that machine loads it, by its packaged files.
	if [ -n "${GDRHOOKTEST_VM_SYSROOT:-}" ]; then
		packaged_load
	else
		insmod /modules/gdrhook.ko
	fi
}

# Nothing may be left holding either module.
unload_modules() {
	rmmod gdrhook || return 1
	rmmod gdrhook_tp || return 1
	rmmod gdrhook_te || return 1
	rmmod vgem || return 1
}

load_tegra_modules() {
	insmod /modules/tegra/gdrhook_tp.ko && insmod /modules/tegra/gdrhook.ko
}

unload_tegra_modules() {
	rmmod gdrhook && rmmod gdrhook_tp
}

. /env
say "guest up: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
desktop_steps=
tegra_steps=
for s in ${GDRHOOKTEST_VM_STEPS:-$STEPS $TEGRA_STEPS}; do
	case " $TEGRA_STEPS " in
	*" $s "*) tegra_steps="$tegra_steps $s" ;;
	*) desktop_steps="$desktop_steps $s" ;;
	esac
done
if step load load_modules; then
	for s in $desktop_steps; do
		case $s in
		slurm) step slurm /bin/slurm_job ;;
		*) step "$s" /bin/gdrhook-vmtest "$s" ;;
		esac
	done
	if step unload unload_modules && [ -n "$tegra_steps" ] &&
		step tegra_load load_tegra_modules; then
		for s in $tegra_steps; do
			step "$s" /bin/gdrhook-vmtest "$s"
		done
		step tegra_unload unload_tegra_modules
	fi
fi

say "in-guest time $(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $T0 }") s"
echo "----- dmesg -----"
dmesg
echo "----- end of dmesg -----"
[ -z "$FAILED_NAMES" ] || say "failed:$FAILED_NAMES"
say "$PASSED passed, $FAILED failed"
if [ $FAILED = 0 ]; then say PASS; else say FAIL; fi
sync
poweroff -f
