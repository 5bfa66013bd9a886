#!/bin/sh
# run.sh - the gdrhook.ko VM test (kmod/README.md says what it covers).
#
# For each kernel (every installed Debian image with its headers, by
# default): builds gdrhook.ko, the test provider and the test exporter (a
# dma-buf exporter that moves buffers) against its headers, and gdrhook.ko
# again for Tegra's nvidia_p2p_* with the Tegra test provider, packs a busybox
# initramfs with them, the static in-guest test program and vgem (a real
# dma-buf exporter that never moves one), boots it in qemu-system-x86_64 with
# software emulation and slab/page poisoning, and prints
#   kmod-vm: kernel RELEASE kasan=y|n lockdep=y|n: N passed, M failed
# counting the guest's tests and, as one more, the kernel log (any KASAN,
# KFENCE, lockdep, WARN, BUG or Oops report fails it). Decided by the
# guest's own count (never by qemu's exit code: a panicking guest exits 0
# too); a guest that prints no count has failed. Exit status 0 only when
# every kernel had 0 failed.
#
# Environment (all optional):
#   GDRHOOKTEST_VM_LOG       guest logs go to this path with .RELEASE appended
#                        (default ./gdrhook-vm.log.RELEASE)
#   GDRHOOKTEST_VM_KVERS     kernels to boot, with the same tests (default:
#                        every /boot/vmlinuz-* with a
#                        /usr/src/linux-headers-<version> tree);
#                        GDRHOOKTEST_VM_KVER is the older name for one
#   GDRHOOKTEST_VM_KERNEL_CACHE  a directory holding kernels built by
#                        tests/vm/debug-kernel/build.sh (RELEASE/bzImage,
#                        RELEASE/build, RELEASE/modules); a RELEASE found
#                        there is taken from there. When linux-source-6.1
#                        is installed and GDRHOOKTEST_VM_KVERS is unset, the
#                        debug kernel is built there (default
#                        ~/.cache/gdrhook/kernels) on the first run, in
#                        the background while the Debian kernels boot,
#                        and booted once built
#   GDRHOOKTEST_VM_PARALLEL  how many kernels boot at once (default 2; 1
#                        boots them one after the other, in their order);
#                        the output is each kernel's whole, in their order
#   GDRHOOKTEST_VM_STEPS     the in-guest tests to run (default: all)
#   GDRHOOKTEST_VM_TIMEOUT   qemu wall-time limit in seconds (default 1200)
#   GDRHOOKTEST_VM_SMP, GDRHOOKTEST_VM_MEM   guest CPUs and memory (default 2, 1G)
#   GDRHOOKTEST_VM_RACE_ITERS, GDRHOOKTEST_VM_FUZZ_CALLS, GDRHOOKTEST_VM_FUZZ_SEED
#                        passed to the guest tests on every kernel
#                        (defaults, for CI's time: 20000 and 200000, and
#                        5000 and 50000 on a KASAN kernel, where each
#                        iteration is about ten times slower; the full
#                        length is 100000 races, kmod/README.md)
#   GDRHOOKTEST_VM_BUILD     (required) a meson build directory of this tree:
#                        its static in-guest test program, and its shim,
#                        fake driver, tests/programs/alloc_cycle and
#                        tests/vm/fake_free_revokes (with the dynamic loader
#                        and the libraries they need) for the pin-on-alloc
#                        pipeline test (the shim pinning through the
#                        module); meson test sets it.
#   GDRHOOKTEST_VM_KEEP=1    keep the work directory
#   GDRHOOKTEST_VM_MODULE    boot this gdrhook.ko (.ko, .ko.xz or .ko.zst)
#                        instead of the one built from the tree: the module
#                        DKMS built from an installed package
#                        (tests/install/clean_root.sh); the test provider
#                        and exporter are still built from the tree
#   GDRHOOKTEST_VM_SYSROOT   a root with the packages installed
#                        (tests/install/clean_root.sh): the guest mounts it
#                        (9p, with an overlay in memory over it) and loads
#                        gdrhook.ko as that machine would, by its packaged
#                        files and maintainer scripts, instead of insmod
#                        (tests/vm/guest/packaged_load.sh)
#   GDRHOOKTEST_VM_KBUILD_DIR  build the modules in DIR/KVER and keep them there,
#                        so that the next run rebuilds only what changed
#                        (tests/mutants/run.py: one kernel module mutant
#                        after another); default: the work directory
#   GDRHOOKTEST_VM_ARCH      amd64 (default) or arm64: Debian's arm64 kernel
#                        (tests/vm/arm64/prepare.sh fetches it into the
#                        kernel cache) in qemu-system-aarch64 -M virt -cpu
#                        max, the modules cross-built, GDRHOOKTEST_VM_BUILD an
#                        aarch64 build; see VM_ARM64_STEPS below
#   GDRHOOKTEST_VM_ARM64_HEADERS  with arm64: the installed amd64 headers
#                        packages whose arm64 twins are booted, as
#                        GDRHOOKTEST_VM_KVERS's are (default
#                        linux-headers-amd64, Debian 12's 6.1;
#                        "linux-headers-amd64 linux-headers-6.12-amd64"
#                        adds bookworm-backports' 6.12, as tests/run_all.sh
#                        does)
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOG=${GDRHOOKTEST_VM_LOG:-$PWD/gdrhook-vm.log}
TIMEOUT=${GDRHOOKTEST_VM_TIMEOUT:-1200}
START=$(date +%s)

msg() { echo "vm-test: $*"; }
# wants_step NAME: GDRHOOKTEST_VM_STEPS is unset (every step) or names it.
wants_step() {
	case " ${GDRHOOKTEST_VM_STEPS:-$1} " in *" $1 "*) return 0 ;; esac
	return 1
}
die() { echo "vm-test: FAIL: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt-get install $2)"; }
# These knobs were GDRHOOK_VM_* before the test harness had a prefix of its
# own (issue 40): an old name still exported is refused, not ignored (an
# ignored kernel cache would rebuild the debug kernel).
old_knobs=$(env | sed -n 's/^\(GDRHOOK_VM_[A-Z0-9_]*\)=.*/\1/p' | paste -sd ' ' -)
[ -z "$old_knobs" ] || die "${old_knobs}: renamed GDRHOOKTEST_VM_* (issue 40)"
PARALLEL=${GDRHOOKTEST_VM_PARALLEL:-2}
case $PARALLEL in
'' | *[!0-9]* | 0*) die "GDRHOOKTEST_VM_PARALLEL=$PARALLEL: how many kernels boot at once, 1 or more" ;;
esac

# Where a kernel's image, headers, modules and config are: Debian's paths,
# or, for a kernel this suite built itself (GDRHOOKTEST_VM_KERNEL_CACHE),
# that directory's RELEASE/ subdirectory.
GDRHOOKTEST_VM_KERNEL_CACHE=${GDRHOOKTEST_VM_KERNEL_CACHE:-$HOME/.cache/gdrhook/kernels}
kcache() { [ -d "$GDRHOOKTEST_VM_KERNEL_CACHE/$1" ] && echo "$GDRHOOKTEST_VM_KERNEL_CACHE/$1"; }
kimage() { c=$(kcache "$1") && echo "$c/bzImage" || echo "/boot/vmlinuz-$1"; }
kheaders() { c=$(kcache "$1") && echo "$c/build" || echo "/usr/src/linux-headers-$1"; }
kmoddir() { c=$(kcache "$1") && echo "$c/modules/lib/modules/$1" || echo "/lib/modules/$1"; }
kconfig() { c=$(kcache "$1") && echo "$c/build/.config" || echo "/boot/config-$1"; }
kflag() { grep -q "^CONFIG_$2=y" "$(kconfig "$1")" 2>/dev/null && echo y || echo n; }
# kboot KVER: the kernel qemu boots. An x86 kernel built with CONFIG_PVH
# boots from its uncompressed ELF (tests/vm/pvh_vmlinux.py), extracted once
# into the kernel cache: no BIOS boot, no decompression under emulation,
# about 3 s less a boot. Otherwise, or when extracting fails, the bzImage.
kboot() {
	image=$(kimage "$1")
	if [ "$VM_ARCH" = amd64 ] && [ "$(kflag "$1" PVH)" = y ]; then
		elf=$GDRHOOKTEST_VM_KERNEL_CACHE/pvh/$1.vmlinux
		if [ ! "$elf" -nt "$image" ]; then
			mkdir -p "$(dirname "$elf")" && python3 "$HERE/pvh_vmlinux.py" "$image" "$elf" >&2 || elf=
		fi
		[ -z "$elf" ] || image=$elf
	fi
	echo "$image"
}

VM_ARCH=${GDRHOOKTEST_VM_ARCH:-amd64}
# modinfo (which nv-p2p flavour each build is) lives in sbin.
PATH=$PATH:/usr/sbin:/sbin
need modinfo kmod
need cpio cpio
need gcc gcc
need make make
case $VM_ARCH in
amd64)
	need qemu-system-x86_64 qemu-system-x86
	BUSYBOX=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
	ldd "$BUSYBOX" 2>&1 | grep -q 'not a dynamic executable' ||
		die "$BUSYBOX is not static (apt-get install busybox-static)"
	;;
arm64)
	need qemu-system-aarch64 qemu-system-arm
	need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
	# Debian's stock arm64 kernel has no KASAN, KFENCE or lockdep (its
	# config has SLUB_DEBUG, PAGE_POISONING and DEBUG_LIST: the guest's
	# slub_debug=FZPU and page_poison=1 use them); the debug kernel
	# (KASAN, lockdep) is amd64's. Races and fuzzing at a tenth of amd64's
	# length keep the emulated arm64 guest within CI's time.
	# The pipeline's programs are aarch64: the dynamic loader, run by
	# qemu-user, lists their libraries where ldd would.
	need qemu-aarch64-static qemu-user-static
	GDRHOOKTEST_VM_RACE_ITERS=${GDRHOOKTEST_VM_RACE_ITERS:-2000}
	GDRHOOKTEST_VM_FUZZ_CALLS=${GDRHOOKTEST_VM_FUZZ_CALLS:-20000}
	;;
*) die "GDRHOOKTEST_VM_ARCH=$VM_ARCH: amd64 or arm64" ;;
esac
[ -n "${GDRHOOKTEST_VM_BUILD:-}" ] ||
	die "GDRHOOKTEST_VM_BUILD unset: name a meson build directory of this tree (meson test sets it)"
B=$(cd "$GDRHOOKTEST_VM_BUILD" && pwd) || die "GDRHOOKTEST_VM_BUILD=$GDRHOOKTEST_VM_BUILD is not a directory"
[ -x "$B/tests/vm/gdrhook-vmtest" ] || die "$B/tests/vm/gdrhook-vmtest missing (ninja -C $B)"

# The kernels: each image with its headers and its modules. Every kernel
# gets the same tests; each prints its own result line.
DEBUG_KERNEL=
if [ -n "${GDRHOOKTEST_VM_KVERS:-${GDRHOOKTEST_VM_KVER:-}}" ]; then
	KVERS=${GDRHOOKTEST_VM_KVERS:-$GDRHOOKTEST_VM_KVER}
elif [ "$VM_ARCH" = arm64 ]; then
	KVERS=
	for headers in ${GDRHOOKTEST_VM_ARM64_HEADERS:-linux-headers-amd64}; do
		msg "arm64 kernel (the twin of $headers): fetching or taking from $GDRHOOKTEST_VM_KERNEL_CACHE"
		kver=$("$HERE/arm64/prepare.sh" "$GDRHOOKTEST_VM_KERNEL_CACHE" "$headers") ||
			die "arm64 kernel: tests/vm/arm64/prepare.sh $headers failed"
		KVERS="${KVERS:+$KVERS }$kver" # no leading space: ${KVERS%% *} below
	done
else
	KVERS=
	for v in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V); do
		[ -f "/usr/src/linux-headers-$v/Makefile" ] && KVERS="$KVERS $v"
	done
	[ -n "$KVERS" ] || die "no /boot/vmlinuz-* with matching /usr/src/linux-headers-* (apt-get install linux-image-amd64 linux-headers-amd64)"
	# The debug kernel (KASAN, KFENCE, lockdep, fault injection), built
	# from Debian's linux-source-6.1 once and then taken from the cache:
	# in the background (start_debug_kernel below), the Debian kernels
	# booting meanwhile, and booted once built.
	if [ -r /usr/src/linux-source-6.1.tar.xz ]; then
		export GDRHOOKTEST_VM_KERNEL_CACHE
		DEBUG_KERNEL=1
	fi
fi
# kernel_missing KVER: what of KVER's image, modules and headers is
# missing, one line; nothing when all are there.
kernel_missing() {
	if [ ! -r "$(kimage "$1")" ]; then
		echo "$(kimage "$1") not readable"
	elif [ ! -d "$(kmoddir "$1")" ]; then
		echo "$(kmoddir "$1") missing"
	elif [ ! -f "$(kheaders "$1")/Makefile" ]; then
		echo "$(kheaders "$1") missing"
	fi
}
for KVER in $KVERS; do
	missing=$(kernel_missing "$KVER")
	[ -z "$missing" ] || die "$missing"
done
# Each kernel's work folder, log and module build are named by its
# release: one listed twice would share them.
# shellcheck disable=SC2086 # $KVERS is several words
[ "$(printf '%s\n' $KVERS | sort | uniq -d)" = "" ] || die "GDRHOOKTEST_VM_KVERS lists a kernel twice: $KVERS"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-vm.XXXXXX")
cleanup() { [ "${GDRHOOKTEST_VM_KEEP:-0}" = 1 ] && msg "work directory kept: $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

# start_debug_kernel: tests/vm/debug-kernel/build.sh in the background; once
# it ends, WORK/debug-kernel.done exists and WORK/debug-kernel.release
# names the kernel (empty when the build failed, its errors in
# WORK/debug-kernel.err). On a cold machine the build is about 450 s of
# CPU: the kernels that need none boot beside it, not after it.
start_debug_kernel() {
	msg "debug kernel: building or taking from $GDRHOOKTEST_VM_KERNEL_CACHE, the other kernels booting meanwhile"
	{
		t=$(date +%s)
		nice -n 10 "$HERE/debug-kernel/build.sh" "$GDRHOOKTEST_VM_KERNEL_CACHE" \
			>"$WORK/debug-kernel.release" 2>"$WORK/debug-kernel.err" || : >"$WORK/debug-kernel.release"
		echo $(($(date +%s) - t)) >"$WORK/debug-kernel.seconds"
		: >"$WORK/debug-kernel.done"
	} &
}
[ -z "$DEBUG_KERNEL" ] || start_debug_kernel

COMMON=$WORK/common
mkdir -p "$COMMON/bin"
# The in-guest test program, built by meson (tests/vm/meson.build).
cp "$B/tests/vm/gdrhook-vmtest" "$COMMON/bin/gdrhook-vmtest"
if [ "$VM_ARCH" = arm64 ]; then
	# ELF e_machine (2 bytes at offset 18): 183 is EM_AARCH64.
	[ "$(od -An -tu2 -j18 -N2 "$COMMON/bin/gdrhook-vmtest" | tr -d ' ')" = 183 ] ||
		die "$B/tests/vm/gdrhook-vmtest is not an aarch64 program (GDRHOOKTEST_VM_BUILD: an aarch64 build)"
	# The busybox of the first kernel's cache (prepare.sh's, arm64).
	BUSYBOX=$(kcache "${KVERS%% *}")/busybox
fi
cp "$BUSYBOX" "$COMMON/bin/busybox"
cp "$HERE/guest/init.sh" "$COMMON/init"
cp "$HERE/guest/packaged_load.sh" "$COMMON/bin/packaged_load"
chmod 755 "$COMMON/init" "$COMMON/bin/packaged_load"
{
	[ -z "${GDRHOOKTEST_VM_SYSROOT:-}" ] || echo "export GDRHOOKTEST_VM_SYSROOT=1"
	[ -z "${GDRHOOKTEST_VM_FUZZ_SEED:-}" ] || echo "export GDRHOOKTEST_VM_FUZZ_SEED=$GDRHOOKTEST_VM_FUZZ_SEED"
	[ -z "${GDRHOOKTEST_VM_STEPS:-}" ] || echo "export GDRHOOKTEST_VM_STEPS='$GDRHOOKTEST_VM_STEPS'"
} >"$COMMON/env"

# The pipeline test: a dynamically linked program under the shim, with the
# fake driver, and every library they load, at the paths ldd names.
list_libraries() { # program: ldd's output for it
	if [ "$VM_ARCH" = arm64 ]; then
		qemu-aarch64-static /lib/ld-linux-aarch64.so.1 --list "$1"
	else
		ldd "$1"
	fi
}
msg "packing the shim and the fake driver from $B"
dyn="$B/hook/libgdrhook.so $B/tests/fake_driver/libcuda.so.1 $B/tests/programs/alloc_cycle $B/tests/vm/fake_free_revokes $B/tests/vm/integrated_host_pins $B/tests/vm/closed_device_fd $B/tools/gdrhook"
mkdir -p "$COMMON/opt/gdrhook"
for f in $dyn; do
	[ -f "$f" ] || die "$f missing (build $B first)"
	cp -L "$f" "$COMMON/opt/gdrhook/"
done
# pack_libraries FILE...: the libraries each FILE loads, at their paths.
pack_libraries() {
	for lib in $(for f in "$@"; do LD_LIBRARY_PATH="$B/tests/fake_driver" list_libraries "$f"; done |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
		case $lib in "$B"/*) continue ;; esac # the fake driver, packed above
		[ -e "$COMMON$lib" ] && continue
		mkdir -p "$COMMON$(dirname "$lib")"
		cp -L "$lib" "$COMMON$lib"
	done
}
# shellcheck disable=SC2086 # $dyn is several files
pack_libraries $dyn

# The slurm step (guest/slurm_job.sh): Debian's munged, Slurm daemons and
# clients, every plugin of theirs and the libraries all of them load, at
# their own paths, gdrhook's Slurm plugin beside the shim, and the job's
# task. The host's Slurm is amd64's: an arm64 guest has no slurm step.
cp "$HERE/guest/slurm_job.sh" "$COMMON/bin/slurm_job"
chmod 755 "$COMMON/bin/slurm_job"
# Not packed where the steps asked for leave the slurm step out (a module
# mutant's run, tests/mutants/run.py): two thirds of the initramfs, which
# the guest unpacks under emulation.
if [ "$VM_ARCH" = amd64 ] && wants_step slurm; then
	slurm="/usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmstepd /usr/bin/srun /usr/bin/sinfo"
	for f in $slurm; do
		[ -x "$f" ] || die "$f missing (apt-get install munge slurmctld slurmd slurm-client)"
	done
	plugins=$(ldd /usr/sbin/slurmd | awk '$1 ~ /^libslurmfull/ { print $3 }' | xargs dirname) ||
		die "slurmd loads no libslurmfull: no plugin folder to pack"
	[ -f "$B/tools/slurm/gdrhook_spank.so" ] || die "$B/tools/slurm/gdrhook_spank.so missing (apt-get install libslurm-dev)"
	cp "$B/tools/slurm/gdrhook_spank.so" "$COMMON/opt/gdrhook/"
	cp "$B/tests/vm/gdrhook-jobpins" "$COMMON/opt/gdrhook/"
	mkdir -p "$COMMON/etc/slurm"
	cp "$ROOT/tests/slurm/test_cluster.conf" "$COMMON/etc/slurm/"
	for f in $slurm; do
		mkdir -p "$COMMON$(dirname "$f")"
		cp -L "$f" "$COMMON$f"
	done
	mkdir -p "$COMMON$(dirname "$plugins")"
	cp -a "$plugins" "$COMMON$plugins"
	# shellcheck disable=SC2086 # $slurm is several files
	pack_libraries $slurm "$plugins"/*.so "$B/tests/vm/gdrhook-jobpins"
fi

# What the kernel reports when something is wrong, whatever the test said:
# KASAN, KFENCE, UBSAN, lockdep, WARN, BUG, Oops, slab poison.
KERNEL_REPORTS='(^|[^A-Za-z_])BUG|WARNING|Oops|Poison overwritten|general protection|KASAN|KFENCE|UBSAN|possible circular locking|possible recursive locking|inconsistent lock state|lock held when returning|suspicious RCU usage|INFO: task .* blocked'

# boot KVER: builds the modules for KVER, packs its initramfs, boots it,
# prints the kernel's result line; fails when anything failed.
boot() {
	kver=$1
	kdir=$(kheaders "$kver")
	moddir=$(kmoddir "$kver")
	kw=$WORK/$kver
	kbuild=$kw/kmod
	[ -z "${GDRHOOKTEST_VM_KBUILD_DIR:-}" ] || kbuild=$GDRHOOKTEST_VM_KBUILD_DIR/$kver
	log=$LOG.$kver
	t0=$(date +%s)
	mkdir -p "$kw"
	msg "kernel $kver: building modules against $kdir"
	# Twice: for the desktop nvidia_p2p_* (no nv-p2p.h: the default) with
	# the test provider and exporter, and, in its own directory, for
	# Tegra's, against the tests' Tegra nv-p2p.h, with the Tegra test
	# provider. modinfo says which flavour the probe chose for each.
	export MAKEFLAGS=-j2 KMOD_ARCH=$VM_ARCH
	# Tegra's flavour only where a Tegra step runs (the guest loads it for
	# those alone: guest/init.sh).
	tegra=
	if wants_step tegra || wants_step tegra_bad_table; then tegra=1; fi
	if ! "$ROOT/kmod/build.sh" "$ROOT/kmod" "$kbuild" "$kdir" >"$kw/build.log" 2>&1 ||
		! "$ROOT/tests/kmods/build.sh" "$kbuild" "$kdir" >>"$kw/build.log" 2>&1 ||
		! { [ -z "$tegra" ] || NV_P2P_H=$ROOT/tests/kmods/provider/tegra/linux/nv-p2p.h \
			"$ROOT/kmod/build.sh" "$ROOT/kmod" "$kbuild-tegra" "$kdir" >>"$kw/build.log" 2>&1; } ||
		! { [ -z "$tegra" ] || "$ROOT/tests/kmods/build.sh" "$kbuild-tegra" "$kdir" --tegra >>"$kw/build.log" 2>&1; } ||
		! flavours=$(modinfo -F nv_p2p "$kbuild/gdrhook.ko" ${tegra:+"$kbuild-tegra/gdrhook.ko"} | tr '\n' ' ') ||
		[ "$flavours" != "desktop ${tegra:+tegra }" ]; then
		cat "$kw/build.log"
		echo "nv-p2p flavours built (want desktop${tegra:+, then tegra}): ${flavours:-}"
		echo "kmod-vm: kernel $kver kasan=$(kflag "$kver" KASAN) lockdep=$(kflag "$kver" PROVE_LOCKING): 0 passed, 1 failed (module build)"
		return 1
	fi
	ir=$kw/initramfs
	cp -a "$COMMON" "$ir"
	# The defaults keep CI's time bounded (the full-length run is one
	# command, kmod/README.md); KASAN and lockdep make each iteration about
	# ten times slower, and the races still happen thousands of times.
	if [ "$(kflag "$kver" KASAN)" = y ]; then
		races=${GDRHOOKTEST_VM_RACE_ITERS:-5000} fuzz=${GDRHOOKTEST_VM_FUZZ_CALLS:-50000}
	else
		races=${GDRHOOKTEST_VM_RACE_ITERS:-20000} fuzz=${GDRHOOKTEST_VM_FUZZ_CALLS:-200000}
	fi
	{
		echo "export GDRHOOKTEST_VM_RACE_ITERS=$races"
		echo "export GDRHOOKTEST_VM_FUZZ_CALLS=$fuzz"
	} >>"$ir/env"
	mkdir -p "$ir/modules/tegra"
	cp "$kbuild/gdrhook.ko" "$kbuild/gdrhook_tp.ko" "$kbuild/gdrhook_te.ko" "$ir/modules/"
	[ -z "$tegra" ] || cp "$kbuild-tegra/gdrhook.ko" "$kbuild-tegra/gdrhook_tp.ko" "$ir/modules/tegra/"
	if [ -n "${GDRHOOKTEST_VM_MODULE:-}" ]; then
		msg "kernel $kver: booting $GDRHOOKTEST_VM_MODULE, not the tree's gdrhook.ko"
		case $GDRHOOKTEST_VM_MODULE in
		*.ko.xz) xz -dc "$GDRHOOKTEST_VM_MODULE" >"$ir/modules/gdrhook.ko" ;;
		*.ko.zst) zstd -qdc "$GDRHOOKTEST_VM_MODULE" >"$ir/modules/gdrhook.ko" ;;
		*) cp "$GDRHOOKTEST_VM_MODULE" "$ir/modules/gdrhook.ko" ;;
		esac
	fi
	# vgem and what it needs, in load order (modules.dep lists dependencies
	# with the first-needed last); with GDRHOOKTEST_VM_SYSROOT, 9p over virtio
	# too, for the guest to mount the root, and overlayfs to make it
	# writable in memory. A module two of them need is loaded once.
	order=
	wanted=vgem
	[ -z "${GDRHOOKTEST_VM_SYSROOT:-}" ] || wanted="$wanted 9p 9pnet_virtio virtio_pci overlay"
	for want in $wanted; do
		deps=$(grep "/$want\.ko[^:]*:" "$moddir/modules.dep" | head -n1) || die "$want not in $moddir/modules.dep"
		for m in $(echo "$deps" | sed 's/^[^:]*: *//' | tr ' ' '\n' | tac) $(echo "$deps" | sed 's/:.*//'); do
			name=$(basename "$m" | sed 's/\.ko.*$/.ko/')
			case " $order " in *" $name "*) continue ;; esac
			order="$order $name"
			src=$moddir/$m
			dst=$ir/modules/$name
			case $m in
			*.ko.xz) xz -dc "$src" >"$dst" ;;
			*.ko.zst) zstd -qdc "$src" >"$dst" ;;
			*.ko.gz) gzip -dc "$src" >"$dst" ;;
			*) cp "$src" "$dst" ;;
			esac
		done
	done
	echo "$order" >"$ir/modules/load_order"
	(cd "$ir" && find . | cpio -o -H newc --quiet) | gzip -1 >"$kw/initramfs.cpio.gz"

	kernel=$(kboot "$kver")
	t1=$(date +%s)
	msg "kernel $kver: booting $kernel (software emulation, limit ${TIMEOUT}s); log: $log"
	set +e
	# tsc=reliable: under a loaded host the emulated TSC drifts against the
	# HPET, the clocksource watchdog then marks it unstable mid-run, and the
	# static-key switch it makes patches live kernel text with int3, which
	# multi-threaded TCG can hit as an Oops in sched_clock_cpu (seen on
	# 6.12). That is the emulator, not the module, so the watchdog stays off.
	#
	# The same emulator fault also strikes while the kernel boots, before
	# any of our code is in the guest: "sched_clock: Marking stable" flips
	# a static key while the other vCPU runs sched_clock_cpu (seen once on
	# 6.12 in a clean-clone CI run, "Oops: int3" at 4.95 s). A guest that
	# reported something and never got to run /init (which loads the
	# modules) is booted once more; anything after /init counts.
	# arm64: -cpu max with pointer authentication's implementation-defined
	# algorithm: the architected one (QARMA) dominates TCG's time, and
	# the kernel signs every return address.
	if [ "$VM_ARCH" = arm64 ]; then
		qemu=qemu-system-aarch64 machine="-machine virt -cpu max,pauth-impdef=on" console=console=ttyAMA0
	else
		qemu=qemu-system-x86_64 machine="-machine pc" console="console=ttyS0 tsc=reliable"
	fi
	# The installed root the guest loads the module from (its
	# modules-load.d, udev rule and maintainer scripts), read-only.
	virtfs=
	[ -z "${GDRHOOKTEST_VM_SYSROOT:-}" ] ||
		virtfs="-virtfs local,path=$GDRHOOKTEST_VM_SYSROOT,mount_tag=sysroot,security_model=none,readonly=on,multidevs=remap"
	for attempt in 1 2; do
		# shellcheck disable=SC2086 # $machine and $virtfs are several words
		timeout --kill-after=10 "$TIMEOUT" "$qemu" \
			-nographic -no-reboot \
			$machine -accel tcg,thread=multi \
			-smp "${GDRHOOKTEST_VM_SMP:-2}" -m "${GDRHOOKTEST_VM_MEM:-1G}" \
			-nic none $virtfs \
			-kernel "$kernel" -initrd "$kw/initramfs.cpio.gz" \
			-append "$console panic=-1 oops=panic slub_debug=FZPU page_poison=1 init_on_free=1 loglevel=7" \
			</dev/null >"$log" 2>&1
		qemu_rc=$?
		if [ "$attempt" = 1 ] && ! grep -q 'Run /init as init process' "$log" &&
			grep -qE "$KERNEL_REPORTS" "$log"; then
			msg "kernel $kver: the kernel failed while booting, before /init (the emulator; our modules were not loaded):"
			grep -E "$KERNEL_REPORTS" "$log" | head -3
			cp "$log" "$log.boot-failure"
			msg "kernel $kver: booting again (its log kept as $log.boot-failure)"
			continue
		fi
		break
	done
	set -e
	t2=$(date +%s)
	msg "kernel $kver: qemu exited with $qemu_rc after $((t2 - t1)) s (build $((t1 - t0)) s)"

	tr -d '\r' <"$log" >"$kw/log"
	passed=$(sed -n 's/^GDRHOOK-VM: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$kw/log")
	failed=$(sed -n 's/^GDRHOOK-VM: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$kw/log")
	ok=1
	if [ -z "$passed" ]; then
		# A guest that never got to its count: a panic, a hang, a timeout.
		msg "kernel $kver: the guest printed no result (qemu rc $qemu_rc; 124 = timed out)"
		passed=$(grep -c '^[a-z_]*: passed in' "$kw/log" || true)
		failed=1
		ok=0
	fi
	# The kernel's own reports count as one more test, passed or failed.
	if grep -nE "$KERNEL_REPORTS" "$kw/log" >"$kw/bad"; then
		msg "kernel $kver: kernel error reports in the guest log:"
		cat "$kw/bad"
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
	# Each node-exporter textfile `gdrhook node` wrote in the guest (printed
	# between marker lines; the kernel's own lines left out) must pass
	# promtool: one more test, passed or failed. No promtool fails it.
	if grep -q '^GDRHOOK-VM-TEXTFILE-BEGIN$' "$kw/log"; then
		if check_textfiles "$kw/log" "$kw/textfile"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	fi
	# The tests' own summary lines: those that start with a step's name.
	names=$(sed -n 's/^GDRHOOK-VM: step \([a-z_]*\)$/\1/p' "$kw/log" | tr '\n' '|')
	grep -E "^(GDRHOOK-VM: step [a-z_]+ took|GDRHOOK-VM: step failed|CHECK FAILED|(${names%|}): )" "$kw/log" |
		sed 's/^/  /' || true
	[ "$failed" = 0 ] && [ "$ok" = 1 ] || {
		echo "===== guest log ($log) ====="
		cat "$kw/log"
		echo "===== end of guest log ====="
	}
	echo "kmod-vm: kernel $kver kasan=$(kflag "$kver" KASAN) lockdep=$(kflag "$kver" PROVE_LOCKING): $passed passed, $failed failed"
	[ "$failed" = 0 ] && [ "$ok" = 1 ]
}

# check_textfiles LOG PREFIX: `promtool check metrics` on each textfile
# in LOG between GDRHOOK-VM-TEXTFILE-BEGIN and -END, written to PREFIX.N.
check_textfiles() {
	command -v promtool >/dev/null || {
		msg "promtool not found (apt-get install prometheus): the guest's textfiles are unchecked"
		return 1
	}
	awk -v prefix="$2" '/^GDRHOOK-VM-TEXTFILE-BEGIN$/ { n++; out = prefix "." n; printf "" >out; next }
		/^GDRHOOK-VM-TEXTFILE-END$/ { out = ""; next }
		out != "" && /^(# (HELP|TYPE) )?gdrhook_/ { print >out }' "$1"
	for f in "$2".*; do
		promtool check metrics <"$f" || { msg "promtool check metrics failed on the guest's $f"; return 1; }
		msg "promtool check metrics: the guest's textfile $f passed ($(grep -vc '^#' "$f") samples)"
	done
}

# start_boot KVER: boots KVER in the background, its output kept in
# WORK/KVER.out and, once done, its status (0 passed, 1 failed) in
# WORK/KVER.status. The subshell keeps a die() inside boot to this kernel:
# a failure of its own, not the end of the others.
start_boot() {
	{
		if (boot "$1") >"$WORK/$1.out" 2>&1; then st=0; else st=1; fi
		echo "$st" >"$WORK/$1.status"
	} &
}

# The kernels boot side by side, PARALLEL (GDRHOOKTEST_VM_PARALLEL) at
# most at once: a guest under software emulation keeps about 1.2 of CI's 2
# cores busy, so one alone leaves the rest idle. Each kernel's output is
# printed whole, in the kernels' order, once it and those before it are
# done. With more than one at a time the KASAN kernels start first: they
# take the longest (each iteration about ten times slower), and one
# started last runs on alone at the end. Measured on the shared 2-core
# machine (load average 4 to 6 from other work), 6.12 and the KASAN debug
# kernel: one at a time 424 s, two at a time 315 s; the debug kernel's
# qemu ran 259 s beside the other against 248 s alone, far inside
# GDRHOOKTEST_VM_TIMEOUT (in the full run beside the others under a load
# average of 10: 532 s).
to_start=
if [ "$PARALLEL" -gt 1 ]; then
	for k in $KVERS; do [ "$(kflag "$k" KASAN)" = n ] || to_start="$to_start $k"; done
	for k in $KVERS; do [ "$(kflag "$k" KASAN)" = y ] || to_start="$to_start $k"; done
else
	to_start=$KVERS
fi
started=
# but_first WORD...: the words after the first.
but_first() { shift; echo "$*"; }
# shellcheck disable=SC2086 # $KVERS is several words
to_print=$(but_first x $KVERS)
verdict=PASS
lines=
# add_debug_kernel: once its build has ended, the debug kernel joins the
# kernels to boot, first in line (the KASAN kernel takes the longest) and
# printed last; a failed build is one failed kernel.
add_debug_kernel() {
	DEBUG_KERNEL=
	dbg=$(cat "$WORK/debug-kernel.release")
	missing="no kernel"
	[ -z "$dbg" ] || missing=$(kernel_missing "$dbg")
	if [ -n "$missing" ]; then
		cat "$WORK/debug-kernel.err"
		lines="${lines}kmod-vm: kernel debug: 0 passed, 1 failed (tests/vm/debug-kernel/build.sh failed: $missing)
"
		verdict=FAIL
		return
	fi
	msg "debug kernel: $dbg ($(cat "$WORK/debug-kernel.seconds") s)"
	to_start="$dbg${to_start:+ $to_start}"
	to_print="${to_print:+$to_print }$dbg"
}
while [ -n "$to_print" ] || [ -n "$DEBUG_KERNEL" ]; do
	[ -z "$DEBUG_KERNEL" ] || [ ! -e "$WORK/debug-kernel.done" ] || add_debug_kernel
	running=0
	for k in $started; do [ -s "$WORK/$k.status" ] || running=$((running + 1)); done
	for k in $to_start; do
		[ "$running" -lt "$PARALLEL" ] || break
		start_boot "$k"
		started="$started $k"
		running=$((running + 1))
	done
	to_start=$(for k in $to_start; do case " $started " in *" $k "*) ;; *) echo "$k" ;; esac; done)
	k=${to_print%% *}
	if [ -n "$k" ] && [ -s "$WORK/$k.status" ]; then
		cat "$WORK/$k.out"
		[ "$(cat "$WORK/$k.status")" = 0 ] || verdict=FAIL
		line=$(grep '^kmod-vm: kernel ' "$WORK/$k.out") ||
			line="kmod-vm: kernel $k: 0 passed, 1 failed (stopped before its count, above)"
		lines="$lines$line
"
		# shellcheck disable=SC2086 # $to_print is several words
		to_print=$(but_first $to_print)
		continue
	fi
	sleep 1
done
wait
END=$(date +%s)
echo "----- kernels -----"
printf '%s' "$lines"
echo "GDRHOOK-VM: $verdict (wall $((END - START)) s)"
[ "$verdict" = PASS ]
