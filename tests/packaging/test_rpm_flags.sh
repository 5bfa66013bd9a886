#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# test_rpm_flags.sh [TARGET]: the RPM builds with the distribution's flags
# (issue 41) and hardened: rpmbuild builds
# packaging/rpm/gdrhook.spec's binary packages (-bb; --target TARGET, as
# tools/package-rpm.sh ARCH=TARGET does, for aarch64) with `meson`
# answered by a stand-in that records each call and the flags it was
# given, and the calls checked: `meson setup` with meson's own flags off
# (--buildtype=plain), PIE on, CFLAGS, CXXFLAGS and LDFLAGS rpm's
# (%build_cflags, %build_cxxflags, %build_ldflags: -O2 -g on Debian's
# rpm, with the hardening flags on RHEL's) and, where rpm's lack them,
# RHEL's hardening flags added by the spec (stack protector, FORTIFY,
# -z relro -z now, the target's control-flow protection); for another
# TARGET, the tree's cross file; then `meson compile` and `meson install`
# of that folder into the build root; nothing meson installed is left
# unpackaged (the Slurm plugin, built where slurm/spank.h is, goes to
# gdrhook-slurm), and gdrhook-slurm requires the Slurm release of that
# header and no other. That is what the spec's
# %meson, %meson_build and %meson_install do; on Debian, whose rpm has no
# %meson macros,
# packaging/rpm/meson-macros-fallback stands in for them (written here, not
# the distribution's text), as in tools/package-rpm.sh, while the flags are
# Debian rpm's own %set_build_flags. The compiled objects' flags
# (DW_AT_producer) are checked by a real build, README "Packages"; the
# hardening of the built files by tests/packaging/check_rpms.sh.
set -eu
TARGET=${1:-$(uname -m)}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdrhook-rpmflags-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
	echo "test_rpm_flags: FAIL: $*" >&2
	sed 's/^/  meson: /' "$WORK/calls" >&2 2>/dev/null || true
	exit 1
}
command -v rpmbuild >/dev/null || fail "rpmbuild not found (apt-get install rpm)"

# The source tarball holds what %install reads (the module's source and
# its packaging files); the build itself is the stand-in's.
version=$(sed -n 's/^Version: *//p' "$ROOT/packaging/rpm/gdrhook.spec")
mkdir -p "$WORK/top/SOURCES" "$WORK/bin"
tar -C "$ROOT" --transform "s,^,gdrhook-$version/," -czf "$WORK/top/SOURCES/gdrhook-$version.tar.gz" \
	kmod packaging/systemd packaging/man-pages.sh packaging/debian/gdrhook.tmpfiles tools/slurm/slurm-epilog \
	cross VERSION LICENSE README.md
cat >"$WORK/bin/meson" <<STUB
#!/bin/sh
{
	echo "call \$*"
	echo "cwd \$(pwd)"
	echo "CFLAGS \${CFLAGS-unset}"
	echo "CXXFLAGS \${CXXFLAGS-unset}"
	echo "LDFLAGS \${LDFLAGS-unset}"
	echo "DESTDIR \${DESTDIR-unset}"
} >>"$WORK/calls"
# What the project's meson install puts in the build root: the command
# (here a program for TARGET with a --help, for the manual pages, which a
# cross build writes under qemu-user), the shim, the header
# and the pkg-config file, and where slurm/spank.h is (Debian's
# libslurm-dev here, slurm-devel there) the Slurm plugin, in the folder
# -Dslurm_plugin_dir names (else Debian's), and its plugstack.conf.d
# snippet, which the RPM must not leave unpackaged.
if [ "\$1" = install ] && [ -n "\${DESTDIR:-}" ]; then
	libdir=\$(sed -n 's/^call setup .*--libdir=\([^ ]*\).*/\1/p' "$WORK/calls")
	plugins=\$(sed -n 's/^call setup .*-Dslurm_plugin_dir=\([^ ]*\).*/\1/p' "$WORK/calls")
	for f in /usr/bin/gdrhook "\$libdir/libgdrhook.so" /usr/include/gdrhook.h "\$libdir/pkgconfig/gdrhook.pc" \
		"\${plugins:-\$libdir/slurm-wlm}/gdrhook_spank.so" /etc/slurm/plugstack.conf.d/gdrhook.conf; do
		mkdir -p "\$DESTDIR\$(dirname "\$f")" && : >"\$DESTDIR\$f"
	done
	install -m 0755 "$WORK/gdrhook" "\$DESTDIR/usr/bin/gdrhook"
fi
STUB
chmod +x "$WORK/bin/meson"
compiler=cc
[ "$TARGET" = "$(uname -m)" ] || compiler=$TARGET-linux-gnu-gcc
printf '#include <stdio.h>\nint main(void) { puts("gdrhook: stand-in"); return 0; }\n' >"$WORK/gdrhook.c"
$compiler -o "$WORK/gdrhook" "$WORK/gdrhook.c" || fail "$compiler cannot build the stand-in command"
: >"$WORK/calls"

set --
[ -n "$(rpm --eval '%{?meson}')" ] || set -- --define "gdrhook_meson_macros $ROOT/packaging/rpm/meson-macros-fallback"
env -u CFLAGS -u CXXFLAGS -u LDFLAGS PATH="$WORK/bin:$PATH" \
	rpmbuild "$@" -bb --target "$TARGET" --nodeps --define "_topdir $WORK/top" "$ROOT/packaging/rpm/gdrhook.spec" \
	>"$WORK/rpmbuild.log" 2>&1 || {
	tail -20 "$WORK/rpmbuild.log" >&2
	fail "rpmbuild -bb failed"
}

# One record per call: its line, then the environment it saw.
field() { # call-pattern name: the value of `name` at the first call matching call-pattern
	awk -v pat="$1" -v name="$2" '
		/^call / { hit = ($0 ~ pat) ; if (hit && !done) { found = 1 } else { found = 0 } }
		found && index($0, name " ") == 1 { print substr($0, length(name) + 2); done = 1; exit }' "$WORK/calls"
}
has_words() { # flags words...: every word in flags
	flags=" $1 "
	shift
	for w; do case $flags in *" $w "*) ;; *) return 1 ;; esac; done
}
cflags=$(rpm --target "$TARGET" --eval '%{build_cflags}')
cxxflags=$(rpm --target "$TARGET" --eval '%{build_cxxflags}')
ldflags=$(rpm --target "$TARGET" --eval '%{?build_ldflags}')
has_words "$cflags" -O2 -g || fail "rpm's own %build_cflags lack -O2 -g: $cflags"

setup=$(grep -m1 '^call setup ' "$WORK/calls") || fail "the spec never runs meson setup"
# shellcheck disable=SC2086 # each flag is a word
has_words "${setup#call }" --buildtype=plain --prefix=/usr -Dtests=false -Db_pie=true ||
	fail "meson setup without the distribution's layout, buildtype plain and PIE: $setup"
if [ "$TARGET" != "$(uname -m)" ]; then
	has_words "${setup#call }" --cross-file "cross/$TARGET-linux-gnu.ini" ||
		fail "meson setup for $TARGET without the tree's cross file: $setup"
fi
# The build folder: the one that `meson compile -C` names, which setup
# must have made (one of its words that is not an option).
builddir=$(sed -n 's/^call compile -C \([^ ]*\).*/\1/p' "$WORK/calls" | head -1)
[ -n "$builddir" ] || fail "no meson compile"
has_words "${setup#call }" "$builddir" || fail "meson compile -C $builddir, a folder setup did not make"
# The distribution's flags first, then (where they lack it) RHEL's
# hardening, which the spec adds.
hardening_c="-Wp,-U_FORTIFY_SOURCE,-D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection"
case $TARGET in
x86_64) hardening_c="$hardening_c -fcf-protection" ;;
aarch64) hardening_c="$hardening_c -mbranch-protection=standard" ;;
esac
for var in CFLAGS CXXFLAGS LDFLAGS; do
	case $var in
	CFLAGS) own=$cflags hardening=$hardening_c ;;
	CXXFLAGS) own=$cxxflags hardening=$hardening_c ;;
	LDFLAGS) own=$ldflags hardening="-Wl,-z,relro -Wl,-z,now" ;;
	esac
	got=$(field '^call setup ' $var)
	case "$got " in
	"${own:+$own }"*) ;;
	*) fail "meson setup's $var are '$got', not the distribution's '$own' first" ;;
	esac
	# shellcheck disable=SC2086 # each flag is a word
	has_words "$got" $hardening || fail "meson setup's $var '$got' lack the hardening flags '$hardening'"
done
grep -q "^call install -C $builddir\( \|$\)" "$WORK/calls" || fail "no meson install of $builddir"
case $(field '^call install ' DESTDIR) in
"$WORK"/top/BUILDROOT/*) ;;
*) fail "meson install not into the build root: DESTDIR $(field '^call install ' DESTDIR)" ;;
esac

# gdrhook-slurm requires the Slurm release its plugin was built for, as
# the header meson found says it (the Debian package's Breaks: the same).
number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\)$/\1/p' /usr/include/slurm/slurm_version.h)
series=$(printf '%d.%02d' $((number >> 16 & 255)) $((number >> 8 & 255)))
next=$(printf '%d.%02d' $((number >> 16 & 255)) $(((number >> 8 & 255) + 1)))
slurm_rpm=$(find "$WORK/top/RPMS" -name "gdrhook-slurm-[0-9]*.$TARGET.rpm")
[ -n "$slurm_rpm" ] || fail "no gdrhook-slurm RPM for $TARGET"
requires=$(rpm -qp --requires "$slurm_rpm" 2>/dev/null)
echo "$requires" | grep -qxF "(slurm >= $series~ with slurm < $next~)" ||
	fail "gdrhook-slurm requires '$(echo "$requires" | paste -sd';')', not Slurm $series alone"
echo "test_rpm_flags: $TARGET: meson setup with rpm's flags ($cflags) and the hardening, compile and install into the build root; gdrhook-slurm requires Slurm $series"
