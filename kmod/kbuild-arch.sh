# kbuild-arch.sh - sourced: KMOD_ARCH (amd64, the default, or arm64) to
# Kbuild's ARCH and, off an aarch64 machine, CROSS_COMPILE (Debian's
# aarch64-linux-gnu-gcc unless set). Shared by build.sh and the tests'
# own module build (tests/kmods/build.sh).
case ${KMOD_ARCH:-} in
'' | amd64 | x86_64) ;;
arm64 | aarch64)
	export ARCH=arm64
	[ "$(uname -m)" = aarch64 ] || export CROSS_COMPILE="${CROSS_COMPILE:-aarch64-linux-gnu-}"
	;;
*) echo "build.sh: KMOD_ARCH=$KMOD_ARCH: amd64 or arm64" >&2; exit 1 ;;
esac
