#!/bin/sh
# run.sh - the gdrhook.ko VM test (kmod/README.md says what it covers).
#
# Builds gdrhook.ko and the test provider against Debian's linux-headers
# for the installed linux-image-amd64, builds the static in-guest test
# program, packs a busybox initramfs with them and vgem (a real dma-buf
# exporter), boots it in qemu-system-x86_64 with software emulation and
# slab/page poisoning, and decides by the guest's "GDRHOOK-VM: PASS" line
# (never by qemu's exit code: a panicking guest exits 0 too) and by the
# absence of kernel error reports in the log.
#
# Environment (all optional):
#   GDRHOOK_VM_LOG       where the guest log goes (default ./gdrhook-vm.log)
#   GDRHOOK_VM_KVER      kernel version to boot (default: newest /boot/vmlinuz-*
#                        with a /usr/src/linux-headers-<version> tree)
#   GDRHOOK_VM_TIMEOUT   qemu wall-time limit in seconds (default 1200)
#   GDRHOOK_VM_SMP, GDRHOOK_VM_MEM   guest CPUs and memory (default 2, 1G)
#   GDRHOOK_VM_RACE_ITERS, GDRHOOK_VM_FUZZ_CALLS, GDRHOOK_VM_FUZZ_SEED
#                        passed to the guest tests (defaults 100000, 1000000)
#   GDRHOOK_VM_BUILD     a meson build directory of this tree: its shim, fake
#                        driver, tests/programs/alloc_cycle and
#                        tests/vm/fake_free_revokes (with the
#                        dynamic loader and the libraries they need) go into
#                        the initramfs for the pin-on-alloc pipeline test
#                        (the shim pinning through the module); meson test sets it. Unset: that
#                        test is skipped, and the run ends in SKIP (exit 77),
#                        not PASS.
#   GDRHOOK_VM_KEEP=1    keep the work directory
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOG=${GDRHOOK_VM_LOG:-$PWD/gdrhook-vm.log}
TIMEOUT=${GDRHOOK_VM_TIMEOUT:-1200}
START=$(date +%s)

msg() { echo "vm-test: $*"; }
die() { echo "vm-test: FAIL: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt-get install $2)"; }

need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need g++ g++
need make make
BUSYBOX=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
ldd "$BUSYBOX" 2>&1 | grep -q 'not a dynamic executable' ||
	die "$BUSYBOX is not static (apt-get install busybox-static)"

# The kernel: its image, its headers and its modules must all match.
if [ -n "${GDRHOOK_VM_KVER:-}" ]; then
	KVER=$GDRHOOK_VM_KVER
else
	KVER=
	for v in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -rV); do
		if [ -f "/usr/src/linux-headers-$v/Makefile" ]; then
			KVER=$v
			break
		fi
	done
	[ -n "$KVER" ] || die "no /boot/vmlinuz-* with matching /usr/src/linux-headers-* (apt-get install linux-image-amd64 linux-headers-amd64)"
fi
KIMG=/boot/vmlinuz-$KVER
KDIR=/usr/src/linux-headers-$KVER
MODDIR=/lib/modules/$KVER
[ -r "$KIMG" ] || die "$KIMG not readable"
[ -d "$MODDIR" ] || die "$MODDIR missing"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-vm.XXXXXX")
cleanup() { [ "${GDRHOOK_VM_KEEP:-0}" = 1 ] && msg "work directory kept: $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

msg "kernel $KVER; building modules"
MAKEFLAGS=-j2 "$ROOT/kmod/build.sh" "$ROOT/kmod" "$WORK/kmod" "$KDIR" --test-provider >"$WORK/build.log" 2>&1 ||
	{ cat "$WORK/build.log"; die "module build failed"; }

msg "building the in-guest test program"
IR=$WORK/initramfs
mkdir -p "$IR/bin" "$IR/modules"
# The cache's kmod backend is linked in as it is, to be tested against the
# real module.
g++ -std=c++17 -O2 -Wall -Wextra -Werror -static -pthread \
	-I"$ROOT" -I"$ROOT/kmod/include/uapi" -I"$ROOT/kmod/test_provider" \
	-o "$IR/bin/gdrhook-vmtest" "$HERE"/guest/*.cpp "$ROOT/cache/backends/kmod_backend.cpp" ||
	die "test program build failed"

# The pipeline test: a dynamically linked program under the shim, with the
# fake driver, and every library they load, at the paths ldd names.
if [ -n "${GDRHOOK_VM_BUILD:-}" ]; then
	B=$(cd "$GDRHOOK_VM_BUILD" && pwd)
	msg "packing the shim and the fake driver from $B"
	dyn="$B/hook/libgdrhook.so $B/tests/fake_driver/libcuda.so.1 $B/tests/programs/alloc_cycle $B/tests/vm/fake_free_revokes"
	mkdir -p "$IR/opt/gdrhook"
	for f in $dyn; do
		[ -f "$f" ] || die "$f missing (build $B first)"
		cp -L "$f" "$IR/opt/gdrhook/"
	done
	for lib in $(for f in $dyn; do LD_LIBRARY_PATH="$B/tests/fake_driver" ldd "$f"; done |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
		case $lib in "$B"/*) continue ;; esac # the fake driver, packed above
		mkdir -p "$IR$(dirname "$lib")"
		cp -L "$lib" "$IR$lib"
	done
else
	msg "GDRHOOK_VM_BUILD unset: the pipeline test will be skipped"
fi

msg "packing the initramfs"
cp "$BUSYBOX" "$IR/bin/busybox"
cp "$HERE/guest/init.sh" "$IR/init"
chmod 755 "$IR/init"
cp "$WORK/kmod/gdrhook.ko" "$WORK/kmod/gdrhook_tp.ko" "$IR/modules/"
# vgem and what it needs, in load order (modules.dep lists dependencies
# with the first-needed last).
deps=$(grep "/vgem\.ko[^:]*:" "$MODDIR/modules.dep" | head -n1) || die "vgem not in $MODDIR/modules.dep"
order=
for m in $(echo "$deps" | sed 's/^[^:]*: *//'); do
	order="$(basename "$m" | sed 's/\.ko.*$/.ko/') $order"
done
order="$order vgem.ko"
for m in $(echo "$deps" | sed 's/^[^:]*: *//') $(echo "$deps" | sed 's/:.*//'); do
	src=$MODDIR/$m
	dst=$IR/modules/$(basename "$m" | sed 's/\.ko.*$/.ko/')
	case $m in
	*.ko.xz) xz -dc "$src" >"$dst" ;;
	*.ko.zst) zstd -qdc "$src" >"$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
done
echo "$order" >"$IR/modules/load_order"
{
	echo "export GDRHOOK_VM_RACE_ITERS=${GDRHOOK_VM_RACE_ITERS:-100000}"
	echo "export GDRHOOK_VM_FUZZ_CALLS=${GDRHOOK_VM_FUZZ_CALLS:-1000000}"
	[ -z "${GDRHOOK_VM_FUZZ_SEED:-}" ] || echo "export GDRHOOK_VM_FUZZ_SEED=$GDRHOOK_VM_FUZZ_SEED"
} >"$IR/env"
sed -i 's|^export PATH=/bin$|export PATH=/bin\n. /env|' "$IR/init"
(cd "$IR" && find . | cpio -o -H newc --quiet) | gzip -1 >"$WORK/initramfs.cpio.gz"

BUILT=$(date +%s)
msg "booting (software emulation, limit ${TIMEOUT}s); log: $LOG"
set +e
timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 \
	-nographic -no-reboot \
	-machine pc -accel tcg,thread=multi \
	-smp "${GDRHOOK_VM_SMP:-2}" -m "${GDRHOOK_VM_MEM:-1G}" \
	-nic none \
	-kernel "$KIMG" -initrd "$WORK/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 oops=panic slub_debug=FZPU page_poison=1 init_on_free=1 loglevel=7" \
	</dev/null >"$LOG" 2>&1
QEMU_RC=$?
set -e
END=$(date +%s)
msg "qemu exited with $QEMU_RC after $((END - BUILT)) s (build $((BUILT - START)) s, total $((END - START)) s)"

# Decide by the guest's verdict line, then by the kernel's own reports.
verdict=PASS
tr -d '\r' <"$LOG" >"$WORK/log"
if ! grep -q '^GDRHOOK-VM: PASS$' "$WORK/log"; then
	verdict=FAIL
	grep -q '^GDRHOOK-VM: FAIL$' "$WORK/log" || msg "the guest printed no verdict (qemu rc $QEMU_RC; 124 = timed out)"
fi
if grep -nE '(^|[^A-Za-z_])BUG|WARNING|Oops|Poison overwritten|general protection' "$WORK/log" >"$WORK/bad"; then
	msg "kernel error reports in the guest log:"
	cat "$WORK/bad"
	verdict=FAIL
fi
grep -E '^(GDRHOOK-VM: step [a-z_]+ took|GDRHOOK-VM: step skipped|basic:|backend:|fake_free_revokes:|pipeline:|races:|fuzz:|kill:|bad_input:)' "$WORK/log" | sed 's/^/  /' || true
if [ "$verdict" != PASS ]; then
	echo "===== guest log ($LOG) ====="
	cat "$WORK/log"
	echo "===== end of guest log ====="
	echo "GDRHOOK-VM: FAIL"
	exit 1
fi
skipped=$(sed -n 's/^GDRHOOK-VM: skipped: *//p' "$WORK/log")
if [ -n "$skipped" ]; then
	# Not a pass: a step that proves part of the issue did not run.
	echo "GDRHOOK-VM: SKIP (wall $((END - START)) s): every step that ran passed; skipped: $skipped"
	exit 77
fi
echo "GDRHOOK-VM: PASS (wall $((END - START)) s)"
