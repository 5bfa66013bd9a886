#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# tests/packaging/check_elf_files.sh, the packages' hardening check, tells
# a hardened file from one without each protection: a small program and
# shared library built with the hardening flags pass it, and built again
# with one protection taken away each fail it, with that protection named
# (no stack protector, no FORTIFY, no RELRO, lazy binding, a program not
# PIE), as does a file for another machine.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-elfcheck-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "test_check_elf_files: FAIL: $*" >&2; exit 1; }
machine=$(uname -m)
other=aarch64
[ "$machine" = aarch64 ] && other=x86_64
# A local array (the stack protector's) that snprintf writes (FORTIFY's
# __snprintf_chk, the array's size known).
cat >"$WORK/hardened.c" <<'C'
#include <stdio.h>
int name_length(const char *name, int n)
{
	char buf[64];
	return snprintf(buf, sizeof buf, "%s:%d", name, n) + buf[0];
}
int main(int argc, char **argv)
{
	return argc > 1 ? name_length(argv[1], argc) : 0;
}
C
hardening="-O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wl,-z,relro -Wl,-z,now"
build() { # case flags...: the program and the library, built with flags
	mkdir -p "$WORK/$1"
	dir=$WORK/$1
	shift
	# shellcheck disable=SC2068 # each flag is a word
	cc -fPIE -pie "$@" -o "$dir/program" "$WORK/hardened.c"
	cc -fPIC -shared "$@" -o "$dir/library.so" "$WORK/hardened.c"
}
# shellcheck disable=SC2086
build hardened $hardening
"$HERE/check_elf_files.sh" "$machine" "$WORK/hardened" || fail "the hardened files fail the check"
expect_failure() { # case words flags...: built with flags, the check fails saying words
	name=$1 words=$2
	shift 2
	build "$name" "$@"
	if "$HERE/check_elf_files.sh" "$machine" "$WORK/$name" >"$WORK/$name.out" 2>&1; then
		fail "files built $name pass the check"
	fi
	grep -q "$words" "$WORK/$name.out" || fail "files built $name fail it for another reason: $(cat "$WORK/$name.out")"
	echo "  $name: $(tail -1 "$WORK/$name.out")"
}
# shellcheck disable=SC2086
{
	expect_failure without-stack-protector "no stack protector" $hardening -fno-stack-protector
	expect_failure without-fortify "not fortified" $hardening -U_FORTIFY_SOURCE
	expect_failure without-relro "no RELRO" $hardening -Wl,-z,norelro
	expect_failure lazy-binding "not BIND_NOW" $hardening -Wl,-z,lazy
}
# A program linked without PIE (the library stays as it is).
mkdir -p "$WORK/not-pie"
# shellcheck disable=SC2086
cc -fno-PIE -no-pie $hardening -o "$WORK/not-pie/program" "$WORK/hardened.c"
"$HERE/check_elf_files.sh" "$machine" "$WORK/not-pie" >"$WORK/not-pie.out" 2>&1 && fail "a program not PIE passes"
grep -q "not PIE" "$WORK/not-pie.out" || fail "a program not PIE fails for another reason: $(cat "$WORK/not-pie.out")"
"$HERE/check_elf_files.sh" $other "$WORK/hardened" >"$WORK/machine.out" 2>&1 && fail "files pass for $other"
grep -q "is for .*, not " "$WORK/machine.out" || fail "the other machine is not named: $(cat "$WORK/machine.out")"
echo "test_check_elf_files: hardened files pass; without each protection, or PIE, or for another machine, they fail"
