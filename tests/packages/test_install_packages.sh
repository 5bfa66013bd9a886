#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# tests/install_packages.sh against a made-up machine (fake dpkg, dpkg-query,
# apt-get and sudo first on PATH, which log what they are asked): it leaves
# alone what is installed, and runs apt only for what is missing; a
# package installed only for arm64 is missing for this machine; an arm64
# package brings the arm64 architecture in first.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/install-packages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install_packages: FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }

mkdir -p "$tmp/bin" "$tmp/tree/tests/packages"
cp "$HERE/../install_packages.sh" "$tmp/tree/tests/"
# The machine: "name arch" per installed package.
cat >"$tmp/bin/dpkg-query" <<'SH'
#!/bin/sh
for p; do :; done
name=${p%%:*} arch=
case $p in *:*) arch=${p#*:} ;; esac
found=1
while read -r n a; do
	[ "$n" = "$name" ] && { [ -z "$arch" ] || [ "$a" = "$arch" ]; } &&
		{ echo "$a installed"; found=0; }
done <"$FAKE_STATE/installed"
exit $found
SH
cat >"$tmp/bin/dpkg" <<'SH'
#!/bin/sh
case $1 in
--print-architecture) echo amd64 ;;
--print-foreign-architectures) cat "$FAKE_STATE/foreign" ;;
*) echo "dpkg $*" >>"$FAKE_STATE/log" ;;
esac
SH
printf '#!/bin/sh\necho "apt-get $*" >>"$FAKE_STATE/log"\n' >"$tmp/bin/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/sudo"
chmod +x "$tmp/bin/"*
export FAKE_STATE=$tmp PATH="$tmp/bin:$PATH"

install() { # build-list tests-list installed foreign
	printf '# build\n%s\n' "$1" >"$tmp/tree/tests/packages/build.txt"
	printf '%s # why\n' "$2" >"$tmp/tree/tests/packages/tests.txt"
	printf '%s\n' "$3" | tr ',' '\n' >"$tmp/installed"
	printf '%s' "$4" >"$tmp/foreign"
	: >"$tmp/log"
	sh "$tmp/tree/tests/install_packages.sh" >"$tmp/out" 2>&1 || fail "the script failed: $(cat "$tmp/out")"
}

# Everything there (meson an "all" package, libfoo beside its arm64 twin).
install "meson libfoo" "bar:arm64" "meson all,libfoo amd64,libfoo arm64,bar arm64" arm64
[ ! -s "$tmp/log" ] || fail "apt or dpkg ran with nothing missing"
grep -q "all 3 packages installed" "$tmp/out" || fail "no 'all installed' line: $(cat "$tmp/out")"

# libfoo only for arm64: missing here. Only it is installed.
install "meson libfoo" "" "meson all,libfoo arm64" arm64
grep -q "^apt-get update" "$tmp/log" || fail "no apt-get update"
grep -qx "apt-get install -y -qq --no-install-recommends libfoo" "$tmp/log" ||
	fail "libfoo alone should have been installed"

# An arm64 package on a machine without arm64: the architecture first.
install "meson" "bar:arm64" "meson all" ""
grep -qx "dpkg --add-architecture arm64" "$tmp/log" || fail "arm64 was not added"
grep -qx "apt-get install -y -qq --no-install-recommends bar:arm64" "$tmp/log" ||
	fail "bar:arm64 was not installed"
echo "test_install_packages: PASS"
