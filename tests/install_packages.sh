#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Installs the Debian packages the build and the tests need,
# tests/packages/build.txt and tests/packages/tests.txt (one list, every
# reader's: the README's test command and CI run this before
# tests/run_all.sh). Those already installed are left alone, and with none
# missing apt is not run at all. As root, or through sudo. The arm64
# packages of the aarch64 leg need the arm64 architecture, which it adds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
wanted=$(sed 's/#.*//' "$here/packages/build.txt" "$here/packages/tests.txt")
# A name without an architecture is the machine's own (or an "all"
# package): an arm64 twin installed beside it does not count.
native=$(dpkg --print-architecture)
missing=
for p in $wanted; do
	case $p in *:*) arch='[^ ]+' ;; *) arch="($native|all)" ;; esac
	dpkg-query -W -f '${Architecture} ${db:Status-Status}\n' "$p" 2>/dev/null |
		grep -Eqx "$arch installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install_packages: all $(echo $wanted | wc -w) packages installed"
	exit 0
fi
as_root=
[ "$(id -u)" = 0 ] || as_root=sudo
case $missing in
*:arm64*)
	dpkg --print-foreign-architectures | grep -qx arm64 || $as_root dpkg --add-architecture arm64
	;;
esac
# The kernel images the VM suite boots: each one's postinst builds an
# initramfs (update-initramfs), 76 to 91 s a kernel on the 2-core machine
# and 77 s more for initramfs-tools' own run, 327 s of the 445 s this
# install took on a fresh one. The VM suite boots them with an initramfs of
# its own (tests/vm/run.sh). Where no kernel in /boot has an initramfs (a
# container, CI's machine: none boots from this /boot), none is built:
# INITRD=No, the switch Debian's kernel hook reads
# (/etc/kernel/postinst.d/initramfs-tools), and initramfs-tools' own run
# then finds no image to update. A machine that boots a Debian kernel
# keeps Debian's default.
initrd=
ls /boot/initrd.img-* >/dev/null 2>&1 || initrd=INITRD=No
echo "install_packages: installing$missing${initrd:+ ($initrd: no kernel in /boot has an initramfs)}"
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086 # one word per package; $initrd empty or one
$as_root env DEBIAN_FRONTEND=noninteractive $initrd apt-get install -y -qq --no-install-recommends \
	$missing >/dev/null
