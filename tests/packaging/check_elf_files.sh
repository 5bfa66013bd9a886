#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/check_elf_files.sh ARCH DIR: every ELF file under DIR
# (a package unpacked: .deb or .rpm) is for ARCH's machine (amd64 or
# x86_64, arm64 or aarch64: Debian's name or RPM's) and built hardened, as read
# from the file itself (readelf), not from the flags a build was given:
#   stack protector  it calls __stack_chk_fail (-fstack-protector-strong)
#   FORTIFY          it calls a checked libc function, __*_chk
#                    (-D_FORTIFY_SOURCE; __stack_chk_fail is not one)
#   RELRO            a GNU_RELRO segment (-Wl,-z,relro)
#   BIND_NOW         BIND_NOW, or NOW among its FLAGS or FLAGS_1
#                    (-Wl,-z,now): with RELRO, the GOT read-only
#   PIE              a program (it names an interpreter) is PIE: FLAGS_1
#                    says PIE (a shared library is position-independent
#                    by nature)
# Shared by the Debian and the RPM packages' checks (check_debs.sh,
# check_rpms.sh). Prints one line per file and the count; exits 1 at the
# first file that fails.
set -eu
ARCH=$1
DIR=$2
fail() { echo "check_elf_files: FAIL: $*" >&2; exit 1; }
case $ARCH in
amd64 | x86_64) MACHINE="Advanced Micro Devices X86-64" ;;
arm64 | aarch64) MACHINE=AArch64 ;;
*) fail "ARCH $ARCH: amd64, x86_64, arm64 or aarch64" ;;
esac
count=0
for f in $(find "$DIR" -type f | sort); do
	head -c 4 "$f" | grep -q "^.ELF" || continue
	name=${f#"$DIR"/}
	got=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
	[ "$got" = "$MACHINE" ] || fail "$name is for $got, not $MACHINE"
	symbols=$(readelf --dyn-syms -W "$f" | awk '$7 == "UND" { sub(/@.*/, "", $8); print $8 }')
	dynamic=$(readelf -d -W "$f")
	echo "$symbols" | grep -qx "__stack_chk_fail" || fail "$name has no stack protector (no __stack_chk_fail)"
	echo "$symbols" | grep -q '^__.*_chk$' ||
		fail "$name is not fortified (no __*_chk function: -D_FORTIFY_SOURCE)"
	readelf -l -W "$f" | grep -q "GNU_RELRO" || fail "$name has no RELRO segment (-Wl,-z,relro)"
	echo "$dynamic" | grep -Eq '\(BIND_NOW\)|\(FLAGS(_1)?\) .*[ :]NOW( |$)' ||
		fail "$name is not BIND_NOW (-Wl,-z,now)"
	kind=library
	if readelf -l -W "$f" | grep -q "INTERP"; then
		kind="program, PIE"
		echo "$dynamic" | grep -Eq '\(FLAGS_1\) .*[ :]PIE( |$)' || fail "$name is a program but not PIE"
	fi
	echo "  $name: $got $kind; stack protector, FORTIFY, RELRO, BIND_NOW"
	count=$((count + 1))
done
[ "$count" -gt 0 ] || fail "no ELF file under $DIR"
echo "check_elf_files: $count ELF file(s) for $MACHINE, each hardened"
