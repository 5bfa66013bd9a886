#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# The RPM builds with the distribution's flags (issue 41): rpmbuild builds
# packaging/rpm/gdrhook.spec's binary packages (-bb) as
# tools/package-rpm.sh does, with `meson` answered by a stand-in that
# records each call and the flags it was given, and the calls checked:
# `meson setup` with meson's own flags off (--buildtype=plain) and CFLAGS,
# CXXFLAGS and LDFLAGS rpm's (%build_cflags, %build_cxxflags,
# %build_ldflags: -O2 -g on Debian's rpm, with the hardening flags on
# RHEL's), then `meson compile` and `meson install` of that folder into
# the build root; and nothing meson installed is left unpackaged (the
# Slurm plugin, built where slurm/spank.h is). That is what the spec's
# %meson, %meson_build and %meson_install do; on Debian, whose rpm has no
# %meson macros,
# packaging/rpm/meson-macros-fallback stands in for them (written here, not
# the distribution's text), as in tools/package-rpm.sh, while the flags are
# Debian rpm's own %set_build_flags. The compiled objects' flags
# (DW_AT_producer) are checked by a real build, README "Packages".
set -eu
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
	kmod packaging/systemd VERSION LICENSE README.md
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
# What the project's meson install puts in the build root: the command,
# the shim, the header and the pkg-config file, and where slurm/spank.h is
# (Debian's libslurm-dev here, slurm-devel there) the Slurm plugin and its
# plugstack.conf.d snippet, which the RPM must not leave unpackaged.
if [ "\$1" = install ] && [ -n "\${DESTDIR:-}" ]; then
	libdir=\$(sed -n 's/^call setup .*--libdir=\([^ ]*\).*/\1/p' "$WORK/calls")
	for f in /usr/bin/gdrhook "\$libdir/libgdrhook.so" /usr/include/gdrhook.h "\$libdir/pkgconfig/gdrhook.pc" \
		"\$libdir/slurm-wlm/gdrhook_spank.so" /etc/slurm/plugstack.conf.d/gdrhook.conf; do
		mkdir -p "\$DESTDIR\$(dirname "\$f")" && : >"\$DESTDIR\$f"
	done
fi
STUB
chmod +x "$WORK/bin/meson"
: >"$WORK/calls"

set --
[ -n "$(rpm --eval '%{?meson}')" ] || set -- --load "$ROOT/packaging/rpm/meson-macros-fallback"
env -u CFLAGS -u CXXFLAGS -u LDFLAGS PATH="$WORK/bin:$PATH" \
	rpmbuild "$@" -bb --nodeps --define "_topdir $WORK/top" "$ROOT/packaging/rpm/gdrhook.spec" \
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
cflags=$(rpm --eval '%{build_cflags}')
cxxflags=$(rpm --eval '%{build_cxxflags}')
ldflags=$(rpm --eval '%{?build_ldflags}')
has_words "$cflags" -O2 -g || fail "rpm's own %build_cflags lack -O2 -g: $cflags"

setup=$(grep -m1 '^call setup ' "$WORK/calls") || fail "the spec never runs meson setup"
# shellcheck disable=SC2086 # each flag is a word
has_words "${setup#call }" --buildtype=plain --prefix=/usr -Dtests=false ||
	fail "meson setup without the distribution's layout and buildtype plain: $setup"
# The build folder: the one that `meson compile -C` names, which setup
# must have made (one of its words that is not an option).
builddir=$(sed -n 's/^call compile -C \([^ ]*\).*/\1/p' "$WORK/calls" | head -1)
[ -n "$builddir" ] || fail "no meson compile"
has_words "${setup#call }" "$builddir" || fail "meson compile -C $builddir, a folder setup did not make"
[ "$(field '^call setup ' CFLAGS)" = "$cflags" ] ||
	fail "meson setup's CFLAGS are '$(field '^call setup ' CFLAGS)', not the distribution's '$cflags'"
[ "$(field '^call setup ' CXXFLAGS)" = "$cxxflags" ] ||
	fail "meson setup's CXXFLAGS are '$(field '^call setup ' CXXFLAGS)', not the distribution's '$cxxflags'"
[ "$(field '^call setup ' LDFLAGS)" = "$ldflags" ] ||
	fail "meson setup's LDFLAGS are '$(field '^call setup ' LDFLAGS)', not the distribution's '$ldflags'"
grep -q "^call install -C $builddir\( \|$\)" "$WORK/calls" || fail "no meson install of $builddir"
case $(field '^call install ' DESTDIR) in
"$WORK"/top/BUILDROOT/*) ;;
*) fail "meson install not into the build root: DESTDIR $(field '^call install ' DESTDIR)" ;;
esac
echo "test_rpm_flags: meson setup with rpm's flags ($cflags), compile and install into the build root"
