#!/bin/sh
# prepare.sh [CACHE_DIR [AMD64_HEADERS]] - Debian's arm64 kernel for the arm64 VM test, laid
# out as tests/vm/run.sh's kernel cache: RELEASE/bzImage (the kernel image),
# RELEASE/build (its headers, what gdrhook.ko is built against) and
# RELEASE/modules/lib/modules/RELEASE (vgem and its dependencies, with
# modules.dep), plus busybox (static, arm64). Prints RELEASE on stdout.
#
# The release is the arm64 twin of the installed AMD64_HEADERS' (default
# linux-headers-amd64, Debian 12's 6.1: 6.1.0-N-amd64 gives 6.1.0-N-arm64;
# linux-headers-6.12-amd64, bookworm-backports' 6.12: 6.12.N+deb12-amd64
# gives 6.12.N+deb12-arm64): `apt-get download` of linux-image-RELEASE,
# linux-headers-RELEASE and busybox-static for arm64 (dpkg
# --add-architecture arm64; nothing is installed), unpacked with dpkg -x.
# The headers' host tools (fixdep, modpost, genksyms) are arm64 programs;
# Debian builds the same linux-kbuild (linux-kbuild-6.1,
# linux-kbuild-6.12.N+deb12) for amd64, installed with the amd64 headers,
# whose modpost reads any ELF class and byte order, so build/scripts points
# there: no emulator runs during the build.
# Kept in CACHE_DIR (default $GDRHOOKTEST_VM_KERNEL_CACHE, else
# ~/.cache/gdrhook/kernels) until the package versions change.
set -eu
CACHE=${1:-${GDRHOOKTEST_VM_KERNEL_CACHE:-$HOME/.cache/gdrhook/kernels}}
meta=${2:-linux-headers-amd64}
die() { echo "arm64 kernel: $*" >&2; exit 1; }

amd64=$(dpkg-query -W -f '${Depends}' "$meta" 2>/dev/null | grep -o 'linux-headers-[^ ,]*-amd64' | head -n1) ||
	die "$meta not installed"
[ -n "$amd64" ] || die "$meta names no headers package"
release=${amd64#linux-headers-}
release=${release%-amd64}-arm64
# The kbuild package those headers depend on, by its name: linux-kbuild-6.1
# for 6.1, linux-kbuild-6.12.N+deb12 for the backports' kernels.
kbuild_pkg=$(dpkg-query -W -f '${Depends}' "$amd64" 2>/dev/null | grep -o 'linux-kbuild-[^ ,]*' | head -n1)
[ -n "$kbuild_pkg" ] || die "$amd64 names no linux-kbuild package"
kbuild=/usr/lib/$kbuild_pkg
[ -x "$kbuild/scripts/mod/modpost" ] || die "$kbuild missing (apt-get install $kbuild_pkg)"
common=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "/usr/src/$amd64/Makefile")
[ -d "$common" ] || die "the headers' common part $common is missing"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
# Which packages, at which versions: the cache is remade when one changes.
pkgs="linux-image-$release:arm64 linux-headers-$release:arm64 busybox-static:arm64"
versions=$(for p in $pkgs; do apt-cache policy "$p" | sed -n "s/^  Candidate: /$p=/p"; done)
[ "$(echo "$versions" | grep -c .)" = 3 ] ||
	die "apt knows no $pkgs (dpkg --add-architecture arm64; apt-get update)"
out=$CACHE/$release
if [ -f "$out/versions" ] && [ "$(cat "$out/versions")" = "$versions" ]; then
	echo "$release"
	exit 0
fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp/debs" "$out.tmp/root"
# apt-get download writes as the _apt user where it can; a folder only
# root may write makes it warn and download as root, which is fine.
(cd "$out.tmp/debs" && apt-get download $pkgs >/dev/null 2>&1) || die "apt-get download $pkgs failed"
for d in "$out.tmp"/debs/*.deb; do dpkg -x "$d" "$out.tmp/root"; done
r=$out.tmp/root
mv "$r/boot/vmlinuz-$release" "$out.tmp/bzImage"
mv "$r/usr/src/linux-headers-$release" "$out.tmp/build"
rm -f "$out.tmp/build/scripts" "$out.tmp/build/tools"
ln -s "$kbuild/scripts" "$out.tmp/build/scripts"
ln -s "$kbuild/tools" "$out.tmp/build/tools"
mkdir -p "$out.tmp/modules/lib/modules"
mv "$r/lib/modules/$release" "$out.tmp/modules/lib/modules/"
depmod -b "$out.tmp/modules" "$release"
mv "$r/bin/busybox" "$out.tmp/busybox"
rm -rf "$out.tmp/debs" "$out.tmp/root"
echo "$versions" >"$out.tmp/versions"
mv "$out.tmp" "$out"
echo "$release"
