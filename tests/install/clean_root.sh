#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# tests/install/clean_root.sh DEB_DIR BUILD_DIR: the Debian packages on a
# clean machine; tests/run_all.sh runs it after the plain build (it
# downloads a Debian root and a compiler: README, "Packages"). By hand,
# after tools/package.sh:
#   tools/package.sh build-deb && tests/install/clean_root.sh build-deb build-test
#
#  1. a fresh Debian 12 root (mmdebstrap, from this machine's apt sources;
#     GDRHOOKTEST_CLEAN_ROOT_TAR=FILE keeps it in FILE and reuses it next time):
#     a machine with systemd and udev and the headers of the kernel the VM
#     test boots (a node's running kernel), installed with apt's defaults
#     (Recommends too), and a list of every file in it;
#  2. apt installs gdrhook, libgdrhook-dev and gdrhook-dkms from DEB_DIR
#     with its defaults (Recommends too): dkms comes with them, and with
#     dkms its Recommends, sudo among them; gdrhook-dkms's postinst creates
#     group gdrhook and has DKMS build and install the module for those
#     headers, and leaves the running kernel (this machine's, the chroot's
#     host) alone, which it says; two users are made, one in group gdrhook
#     and one outside it;
#  3. from the installed paths only: `gdrhook --version` (the package's
#     version), `gdrhook doctor`, `pkg-config --libs gdrhook` (pkg-config
#     brought by libgdrhook-dev), a manual page per subcommand, and the
#     demo program (from BUILD_DIR, with the fake driver) under `gdrhook
#     run --pin alloc`, which finds the installed shim by itself and whose
#     log check must pass;
#  4. the VM suite boots that kernel with the root shared read-only
#     (GDRHOOKTEST_VM_SYSROOT, tests/vm/guest/packaged_load.sh; an overlay
#     in the guest's memory makes it writable there): the module DKMS
#     built is loaded by the root's systemd-modules-load from the packaged
#     modules-load.d file, systemd-udevd applies the packaged rule
#     (/dev/gdrhook group gdrhook, 0666), the member and the other user
#     both open it, and modinfo says the package's version; the installed prerm unloads the module; then a
#     purge and install on the running machine in dpkg's order (postrm
#     purge, preinst, the rule unpacked and read by udevd, postinst): the
#     postinst loads the module and the new node is the group's; then the pin/unpin test (step basic) and the node view (step node)
#     run with it;
#  5. apt purges the three packages (--autoremove, apt's defaults): every
#     file, the DKMS tree, the module, the group and what apt brought for
#     them (dkms, sudo) must be gone. sudo refuses its own removal on a
#     machine whose root has no password (this root, and many nodes)
#     unless SUDO_FORCE_REMOVE=yes, sudo's own way to say the admin has
#     another way in: the purge says it, as an operator would. What apt
#     keeps because apt suggests it (dpkg-dev, the compiler) goes with a
#     second autoremove; then the root's file list must be as in 1.
# GDRHOOKTEST_CLEAN_ROOT_INSTALLED_TAR=FILE keeps the root as installed (after
# 2) in FILE. Prints each step's wall time and "clean-root: PASS" or "FAIL". Needs root,
# mmdebstrap, and the kernel image and qemu of the VM suite.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT_DIR=$(cd "$HERE/../.." && pwd)
DEBS=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
KVER=${GDRHOOKTEST_INSTALL_KVER:-$(ls /boot/vmlinuz-6.1.* | sed 's|^/boot/vmlinuz-||' | sort -V | tail -n1)}
START=$(date +%s)
T=$START
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-clean-root.XXXXXX")
R=$WORK/root

msg() { echo "clean-root: $*"; }
step_done() { now=$(date +%s); msg "$1 ($((now - T)) s)"; T=$now; }
fail() { msg "FAIL: $*"; exit 1; }
in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"; }
mounted=
cleanup() {
	for m in $mounted; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
[ "$(id -u)" = 0 ] || fail "needs root (chroot, mmdebstrap)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (apt-get install mmdebstrap)"
for p in gdrhook libgdrhook-dev gdrhook-dkms; do
	ls "$DEBS"/${p}_*.deb >/dev/null 2>&1 || fail "no $p .deb in $DEBS (tools/package.sh)"
done

# 1. The root, from the machine's own apt sources.
sources=$WORK/sources
cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
	grep -v '^#' >"$sources.sources" || true
# apt's defaults here too (mmdebstrap's own leave Recommends out), as on a
# machine installed with apt: else what the root's packages recommend
# (gcc-12's libc6-dev, and its libc-devtools and fonts) came with the
# packages' dependencies and stayed after the purge, kept by those
# packages' Recommends.
debstrap() {
	mmdebstrap --quiet --variant=apt --aptopt='APT::Install-Recommends "true"' \
		--include="systemd,udev,linux-headers-$KVER" \
		bookworm "$1" "$sources.sources" || fail "mmdebstrap"
}
if [ -n "${GDRHOOKTEST_CLEAN_ROOT_TAR:-}" ]; then
	# A root made by an earlier run (same sources, same packages), for
	# working on this script; the test proper makes a fresh one.
	[ -f "$GDRHOOKTEST_CLEAN_ROOT_TAR" ] || debstrap "$GDRHOOKTEST_CLEAN_ROOT_TAR"
	mkdir -p "$R"
	tar -C "$R" -xf "$GDRHOOKTEST_CLEAN_ROOT_TAR"
else
	debstrap "$R"
fi
for m in proc sys dev; do
	mount --bind "/$m" "$R/$m"
	mounted="$R/$m $mounted"
done
# What a package could leave: every path but logs, caches and apt's state,
# the backups shadow's tools keep of the files they edit (/etc/gshadow-),
# depmod's indexes of a kernel's modules (rebuilt by DKMS at install
# and removal; checked below to name no gdrhook), and the key DKMS made to
# sign modules (/var/lib/dkms/mok.key, .pub: dkms's purge keeps it, as it
# may be enrolled in the firmware's MOK list; /var/lib/dkms/gdrhook is
# checked below).
snapshot() {
	in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
		-o -path /var/log -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
		-o -path /root \) -prune -o -print | grep -v -e '^/etc/[a-z]*-$' \
		-e '^/usr/lib/modules/[^/]*/modules\.' -e '^/lib/modules/[^/]*/modules\.' \
		-e '^/var/lib/dkms$' -e '^/var/lib/dkms/mok\.\(key\|pub\)$' | sort
}
snapshot >"$WORK/before"
in_root getent group gdrhook >/dev/null && fail "group gdrhook exists before the install"
for p in dkms sudo; do
	in_root dpkg-query -W -f='${Status}\n' $p 2>/dev/null | grep -q "install ok installed" &&
		fail "$p installed before the packages"
done
step_done "1. Debian 12 root with systemd, udev and linux-headers-$KVER: $(wc -l <"$WORK/before") paths"

# 2. The packages, with apt.
mkdir -p "$R/tmp/debs"
debs=
for p in gdrhook libgdrhook-dev gdrhook-dkms; do
	deb=$(ls "$DEBS"/${p}_*.deb | sort -V | tail -n1)
	cp "$deb" "$R/tmp/debs/"
	debs="$debs /tmp/debs/$(basename "$deb")"
	msg "  $(basename "$deb"): $(stat -c %s "$deb") bytes"
done
# mmdebstrap leaves no package lists in the root: apt needs them to find
# what the packages depend on.
in_root apt-get update -qq >"$WORK/update.log" 2>&1 || { cat "$WORK/update.log"; fail "apt-get update"; }
# shellcheck disable=SC2086
in_root apt-get install -y $debs >"$WORK/install.log" 2>&1 || {
	cat "$WORK/install.log"
	fail "apt-get install"
}
grep -E "^(Setting up gdrhook|Setting up libgdrhook|Building|Installing|DKMS|dkms)" "$WORK/install.log" | sed 's/^/  /' || true
in_root dkms status | sed 's/^/  dkms status: /'
ko=$(ls "$R/lib/modules/$KVER/updates/dkms/"gdrhook.ko* 2>/dev/null | head -n1)
[ -n "$ko" ] || fail "DKMS installed no gdrhook.ko for $KVER"
msg "  module: ${ko#$R} ($(stat -c %s "$ko") bytes)"
in_root getent group gdrhook | sed 's/^/  group: /'
in_root getent group gdrhook >/dev/null || fail "no group gdrhook after the install"
for f in /lib/udev/rules.d/70-gdrhook.rules /usr/lib/sysusers.d/gdrhook.conf \
	/usr/lib/modules-load.d/gdrhook.conf /usr/lib/gdrhook-dkms/running-kernel.sh /usr/bin/gdrhook \
	/usr/include/gdrhook.h /lib/systemd/system/gdrhook-node-metrics.service \
	/lib/systemd/system/gdrhook-node-metrics.timer /usr/lib/gdrhook/slurm-epilog; do
	[ -f "$R$f" ] || fail "$f not installed"
done
# The node-metrics timer ships off: nothing enables it (an operator does,
# with systemctl enable --now).
ls "$R"/etc/systemd/system/*.wants/gdrhook-node-metrics.* >/dev/null 2>&1 &&
	fail "the install enabled gdrhook-node-metrics (it ships off)"
for p in dkms sudo; do
	in_root dpkg-query -W -f='${Status}\n' $p 2>/dev/null | grep -q "install ok installed" ||
		fail "$p not installed with the packages (dkms and its Recommends)"
done
grep -q "installed in a chroot: the running kernel .* is left alone" "$WORK/install.log" ||
	fail "the postinst in the chroot did not say it left this machine's running kernel alone"
in_root useradd --system --user-group --no-create-home --groups gdrhook gdrhook-member
in_root useradd --system --user-group --no-create-home gdrhook-outsider
# The installed root, for running step 4 again by hand with one file of
# it changed (tests/vm/run.sh with GDRHOOKTEST_VM_SYSROOT; README, "Packages").
if [ -n "${GDRHOOKTEST_CLEAN_ROOT_INSTALLED_TAR:-}" ]; then
	tar -C "$R" --one-file-system -cf "$GDRHOOKTEST_CLEAN_ROOT_INSTALLED_TAR" .
fi
step_done "2. installed with apt (Recommends: dkms, sudo); DKMS built the module for $KVER"

# 3. The installed command and shim.
version=$(in_root gdrhook --version)
msg "  $version"
[ "$(echo "$version" | head -n1)" = "gdrhook $(in_root dpkg-query -W -f='${Version}' gdrhook)" ] ||
	fail "gdrhook --version is not the package's version"
echo "$version" | grep -q "^Slurm plugin built for Slurm [0-9]" ||
	fail "gdrhook --version does not name the Slurm its plugin is for"
for page in gdrhook gdrhook-run gdrhook-log gdrhook-log-check gdrhook-doctor gdrhook-node; do
	[ -f "$R/usr/share/man/man1/$page.1.gz" ] || fail "no manual page $page(1)"
done
msg "  manual pages: $(ls "$R/usr/share/man/man1/" | grep -c '^gdrhook')"
set +e
in_root gdrhook doctor >"$WORK/doctor" 2>&1
doctor=$?
set -e
sed 's/^/  doctor: /' "$WORK/doctor"
# No driver and no module loaded here: the doctor finds problems (1) and
# must say so, not fail to run.
[ "$doctor" = 1 ] || fail "gdrhook doctor exited $doctor (1 expected: no driver in the root)"
in_root pkg-config --cflags --libs gdrhook | sed 's/^/  pkg-config: /'
mkdir -p "$R/opt/gdrhook-test"
cp "$B/tests/programs/gdrhook-demo" "$B/tests/fake_driver/libcuda.so.1" "$R/opt/gdrhook-test/"
set +e
in_root env LD_LIBRARY_PATH=/opt/gdrhook-test gdrhook run --pin alloc \
	--events /tmp/demo.%p.jsonl -- /opt/gdrhook-test/gdrhook-demo >"$WORK/demo" 2>&1
demo=$?
set -e
sed 's/^/  demo: /' "$WORK/demo"
[ "$demo" = 0 ] || fail "the demo under the installed gdrhook exited $demo"
grep -q "libgdrhook.so" "$WORK/demo" || true
in_root sh -c 'gdrhook log check /tmp/demo.*.jsonl' | sed 's/^/  log check: /'
in_root sh -c 'grep -h "\"ev\":\"pin\"" /tmp/demo.*.jsonl | head -n1' | grep -q . ||
	fail "the demo's log has no pin: the installed shim did not run"
step_done "3. gdrhook --version, doctor, the demo from the installed paths"

# 4. The module in the VM, loaded by the root's own files and commands
# (the root shared read-only: without the host's /proc, /sys and /dev).
for m in $mounted; do umount "$m"; done
set +e
GDRHOOKTEST_VM_SYSROOT=$R GDRHOOKTEST_VM_KVERS=$KVER GDRHOOKTEST_VM_STEPS="basic node" \
	GDRHOOKTEST_VM_BUILD=$B GDRHOOKTEST_VM_LOG=$WORK/vm.log "$ROOT_DIR/tests/vm/run.sh" >"$WORK/vm" 2>&1
vm=$?
set -e
for m in $mounted; do mount --bind "/${m##*/}" "$m"; done
tr -d '\r' <"$WORK/vm.log.$KVER" 2>/dev/null | grep "^packaged: " | sed 's/^/  /' || true
[ "$vm" = 0 ] || {
	cat "$WORK/vm"
	fail "the VM test of the packaged module"
}
tr -d '\r' <"$WORK/vm.log.$KVER" | grep -q "^packaged: PASS" ||
	fail "the guest did not load the module by the packaged files"
grep -E "^(vm-test: kernel .*booting|  basic:|  node:|kmod-vm:)" "$WORK/vm" | sed 's/^/  /'
in_root userdel gdrhook-member
in_root userdel gdrhook-outsider
step_done "4. VM: $KVER booted, the module loaded and unloaded by the packaged files and scripts"

# 5. Purge, with apt's defaults: --autoremove takes what apt installed for
# the packages and nothing else needs (dkms, sudo, libsimdjson14, pkgconf);
# SUDO_FORCE_REMOVE=yes: see 5. above.
in_root SUDO_FORCE_REMOVE=yes apt-get purge --autoremove -y gdrhook gdrhook-dkms libgdrhook-dev \
	>"$WORK/purge.log" 2>&1 || {
	cat "$WORK/purge.log"
	fail "apt-get purge"
}
for p in dkms sudo; do
	in_root dpkg-query -W -f='${Status}\n' $p 2>/dev/null | grep -q "install ok installed" &&
		fail "$p left installed by the purge"
done
# apt also keeps, by default, what an installed package suggests
# (APT::AutoRemove::SuggestsImportant): apt itself suggests dpkg-dev, so
# dkms's dpkg-dev and compiler stay after that purge. They are apt's to
# keep, not the packages' leftovers: a second autoremove without that rule
# takes them (listed), and the root must then be as it was.
in_root apt-get autoremove --purge -y -o APT::AutoRemove::SuggestsImportant=false \
	>"$WORK/autoremove.log" 2>&1 || {
	cat "$WORK/autoremove.log"
	fail "apt-get autoremove"
}
kept=$(sed -n 's/^Removing \([^ ]*\) .*/\1/p' "$WORK/autoremove.log" | paste -sd' ' -)
msg "  kept by apt for its Suggests, then autoremoved: $(echo "$kept" | wc -w) packages: $kept"
rm -rf "$R/opt/gdrhook-test"
snapshot >"$WORK/after"
if ! diff "$WORK/before" "$WORK/after" >"$WORK/left"; then
	sed 's/^/  /' "$WORK/left"
	fail "the purge left the root different (above: < missing, > left behind)"
fi
in_root getent group gdrhook >/dev/null && fail "group gdrhook left behind"
ls "$R/lib/modules/$KVER/updates/dkms/"gdrhook.ko* >/dev/null 2>&1 && fail "gdrhook.ko left behind"
[ -e "$R/var/lib/dkms/gdrhook" ] && fail "/var/lib/dkms/gdrhook left behind"
grep -l gdrhook "$R/etc/group" "$R/etc/gshadow" "$R/lib/modules/$KVER/"modules.* 2>/dev/null &&
	fail "gdrhook still named in the files above"
step_done "5. purged: no file, module, DKMS tree, group, dkms or sudo left"
msg "PASS (wall $(( $(date +%s) - START )) s)"
