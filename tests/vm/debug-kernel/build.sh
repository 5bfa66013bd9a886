#!/bin/sh
# build.sh [CACHE_DIR] - the VM suite's debug kernel (kmod/README.md):
# Debian's linux-source-6.1 on a minimal config (tinyconfig plus
# gdrhook-debug.config: what the guest needs, KASAN, KFENCE, PROVE_LOCKING,
# DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS, FAULT_INJECTION/FAILSLAB).
#
# Built once and kept in CACHE_DIR (default $GDRHOOKTEST_VM_KERNEL_CACHE, else
# ~/.cache/gdrhook/kernels) as RELEASE/bzImage, RELEASE/build (the tree,
# what gdrhook.ko is built against) and RELEASE/modules (vgem); tests/vm/
# run.sh boots it when GDRHOOKTEST_VM_KERNEL_CACHE names that directory. A
# cached kernel is reused as long as the source package's version, the
# fragment and RECIPE below are unchanged. Prints RELEASE on stdout.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
[ -z "${GDRHOOK_VM_KERNEL_CACHE:-}" ] || {
	echo "debug kernel: GDRHOOK_VM_KERNEL_CACHE is now GDRHOOKTEST_VM_KERNEL_CACHE (issue 40)" >&2
	exit 1
}
CACHE=${1:-${GDRHOOKTEST_VM_KERNEL_CACHE:-$HOME/.cache/gdrhook/kernels}}
SRC=/usr/src/linux-source-6.1.tar.xz
[ -r "$SRC" ] || { echo "debug kernel: $SRC missing (apt-get install linux-source-6.1)" >&2; exit 1; }
mkdir -p "$CACHE"
# One build at a time per cache (two suites started together wait here).
exec 9>"$CACHE/.lock"
flock 9
# Cost, measured on the shared 2-core development machine (2026-11-28):
# 1,116 objects; the last 691 of them took 460 s wall, 231 s user and
# 51 s system CPU at load average 5-7, so the whole build is about 450 s
# of CPU: a few minutes on two idle cores, ~25 min only when the machine
# is shared (the first 425 objects took 35 min at load average 20-27).
# Bump RECIPE when a change to this script changes the kernel it builds.
RECIPE=1
key=$( (echo "$RECIPE"; dpkg-query -W -f '${Version}' linux-source-6.1; cat "$HERE/gdrhook-debug.config") | sha256sum | cut -c1-12)
if [ -f "$CACHE/debug-$key.release" ]; then
	cat "$CACHE/debug-$key.release"
	exit 0
fi
T0=$(date +%s)
work=$CACHE/src-$key
rm -rf "$work"
mkdir -p "$work"
tar -xf "$SRC" -C "$work" --strip-components=1
cd "$work"
echo "-gdrhook-debug" >localversion
make -s tinyconfig >/dev/null
./scripts/kconfig/merge_config.sh -m .config "$HERE/gdrhook-debug.config" >/dev/null
make -s olddefconfig >/dev/null
# Every option of the fragment must have survived olddefconfig (a missing
# dependency silently drops one).
missing=
for opt in $(grep -E '^CONFIG_[A-Z0-9_]+=[ym]' "$HERE/gdrhook-debug.config"); do
	grep -qx "$opt" .config || missing="$missing $opt"
done
# and every option it leaves out must stay out (another option's select
# brings one back).
for opt in $(sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$HERE/gdrhook-debug.config"); do
	! grep -q "^$opt=" .config || missing="$missing $opt(set)"
done
[ -z "$missing" ] || { echo "debug kernel: changed by olddefconfig:$missing" >&2; exit 1; }
make -s -j"$(nproc)" bzImage modules >build.log 2>&1 || { tail -40 build.log >&2; exit 1; }
release=$(make -s kernelrelease)
out=$CACHE/$release
rm -rf "$out"
mkdir -p "$out"
cp arch/x86/boot/bzImage "$out/bzImage"
make -s INSTALL_MOD_PATH="$out/modules" modules_install >/dev/null
ln -s "$work" "$out/build"
echo "$release" >"$CACHE/debug-$key.release"
echo "debug kernel: $release built in $(( $(date +%s) - T0 )) s" >&2
echo "$release"
