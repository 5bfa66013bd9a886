# SPDX-License-Identifier: MIT OR GPL-2.0-only
# shellcheck shell=sh
# Sourced by the tests that build packages (arm64_debs.sh, rpms.sh): the
# cross compilers through ccache too. Meson puts ccache before a compiler
# it finds itself, not before one a cross file names
# (cross/aarch64-linux-gnu.ini, which the arm64 .debs and the aarch64 RPMs
# build with); Debian's ccache keeps a link named as each installed
# compiler, the cross ones among them, in /usr/lib/ccache. First in PATH,
# the cross file's aarch64-linux-gnu-g++ is that link. A machine that keeps
# its ~/.cache between runs (CI's) then compiles only what changed since
# its last run, as the test builds do: the arm64 .debs took 360 s and each
# RPM build 422 s of a cold local run, every one of them a full compile.
if [ -d /usr/lib/ccache ] && command -v ccache >/dev/null 2>&1; then
	PATH=/usr/lib/ccache:$PATH
	export PATH
fi
