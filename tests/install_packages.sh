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
echo "install_packages: installing$missing"
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086 # one word per package
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	$missing >/dev/null
