#!/usr/bin/env bash
# The Debian packages (debian/, scripts/deb.sh, `make deb`) build from the
# source tree and hold what they should: the programs, the man page, the
# unit (installed, not enabled or started), the dbcron user made by
# systemd-sysusers in postinst, the example configuration as a conffile,
# the library and its development files.  The unpacked dbcron runs, and a
# C program builds against the unpacked development package.  Nothing is
# installed on this host (docs/testing.md says how to try dpkg -i by hand).
# Skipped (77) without debhelper: `bash scripts/deps.sh --with-deb`;
# under DBCRON_REQUIRE_DEB=1 (what .ci/run sets) that is a failure instead.
# Skipped under a sanitizer (below).
set -euo pipefail
source "$DBCRON_TESTLIB"
: "${DBCRON_SRC:?DBCRON_SRC must point at the source tree}"
# The packages build from the source tree with Debian's own flags, whatever
# this build directory was configured with: under a sanitizer this test
# would only repeat the plain run's check, at four minutes of compiling.
if [ -n "${DBCRON_SANFLAGS:-}" ]; then
	t_skip "the package build does not depend on this build's sanitizer; the plain run checks it"
fi
if ! command -v dh >/dev/null || ! command -v dpkg-buildpackage >/dev/null; then
	echo "# deb: skipped: debhelper or dpkg-dev missing (bash scripts/deps.sh --with-deb)"
	[ "${DBCRON_REQUIRE_DEB:-0}" = 1 ] && exit 1
	exit 77
fi

t_section "dpkg-buildpackage -us -uc -b"
rc=0
# nocheck: the suite this test is part of runs the tests, so the package
# build compiles the library and programs alone (debian/rules)
debs=$(DEB_BUILD_OPTIONS=nocheck bash "$DBCRON_SRC/scripts/deb.sh" "$T_DIR/deb" 2>"$T_DIR/deb.err") || rc=$?
assert_eq 0 "$rc" "the packages build: $(tail -5 "$T_DIR/deb.err")"
v=$(sed -n '1s/^dbcron (\([^)]*\)).*/\1/p' "$DBCRON_SRC/debian/changelog")
a=$(dpkg-architecture -qDEB_HOST_ARCH)
for p in dbcron libdbcron0 libdbcron-dev; do
	assert_contains "$debs" "$T_DIR/deb/${p}_${v}_$a.deb" "built $p"
done

t_section "what each package holds"
has() { # PACKAGE PATH...
	local list
	list=$(dpkg-deb -c "$T_DIR/deb/$1_${v}_$a.deb" | awk '{print $6}')
	shift
	local f
	for f in "$@"; do
		assert_match "$list" "^\./$f$" "$f"
	done
}
has dbcron usr/bin/dbcron usr/libexec/dbcron/dbcron-guard usr/share/man/man1/dbcron.1.gz usr/share/man/man5/dbcron.conf.5.gz \
	lib/systemd/system/dbcron-node.service usr/lib/sysusers.d/dbcron.conf \
	etc/dbcron/dbcron.conf.example etc/dbcron/dbcron.conf.d/ usr/share/doc/dbcron/cli.md.gz \
	usr/share/bash-completion/completions/dbcron usr/share/doc/dbcron/copyright
has libdbcron0 'usr/lib/[^/]*/libdbcron\.so\.0\.[0-9.]*'
dev_deps=$(dpkg-deb -f "$T_DIR/deb/libdbcron-dev_${v}_$a.deb" Depends)
for d in libsqlite3-dev libglib2.0-dev libjansson-dev; do # dbcron.pc's Requires.private
	assert_match "$dev_deps" "(^|, )$d(,|$)" "the -dev package brings $d, which dbcron.pc requires"
done
# The libraries loaded on first use (src/core/dynlib.h) are not linked, so
# dh_shlibdeps cannot see them: each package that can load one names it.
mapfile -t loaded < <(grep -rhoE '\.package = "[^"]+"' "$DBCRON_SRC/src" | sed -E 's/.*"(.*)"/\1/' | sort -u)
assert_eq 5 "${#loaded[@]}" "five libraries are loaded on first use: ${loaded[*]}"
for pkg in dbcron libdbcron0; do
	deps=$(dpkg-deb -f "$T_DIR/deb/${pkg}_${v}_$a.deb" Depends)
	for d in "${loaded[@]}"; do
		[ "$pkg" = libdbcron0 ] && [ "$d" = libsystemd0 ] && continue # the CLI's alone
		assert_match "$deps" "(^|, )$d(,|$| )" "$pkg depends on $d, which it loads on first use"
	done
done
has libdbcron-dev usr/include/dbcron/dbcron.h 'usr/lib/[^/]*/libdbcron\.a' \
	'usr/lib/[^/]*/pkgconfig/dbcron\.pc'
ctl=$T_DIR/ctl
mkdir -p "$ctl"
dpkg-deb -e "$T_DIR/deb/dbcron_${v}_$a.deb" "$ctl"
assert_contains "$(cat "$ctl/postinst")" "systemd-sysusers" "postinst makes the dbcron user"
assert_not_contains "$(cat "$ctl/postinst")" "deb-systemd-invoke" "postinst does not start the node"
assert_not_contains "$(cat "$ctl/postinst")" "deb-systemd-helper enable 'dbcron-node.service' >/dev/null || true
	else" "postinst does not enable the node on a first install"
assert_contains "$(cat "$ctl/conffiles")" "/etc/dbcron/dbcron.conf.example" "the example is a conffile"
assert_match "$(dpkg-deb -f "$T_DIR/deb/dbcron_${v}_$a.deb" Depends)" "libsqlite3-0" "shlibs: depends on libsqlite3"

t_section "lintian"
# errors and warnings fail (an override says why where one is meant:
# debian/*.lintian-overrides); lintian comes with scripts/deps.sh --with-deb
if command -v lintian >/dev/null; then
	rc=0
	lint=$(cd "$T_DIR/deb" && lintian --fail-on error,warning --tag-display-limit 0 \
		dbcron_"${v}"_"$a".deb libdbcron0_"${v}"_"$a".deb libdbcron-dev_"${v}"_"$a".deb 2>&1) || rc=$?
	lint=$(grep -v '^running with root privileges' <<<"$lint" || true)
	assert_eq 0 "$rc" "lintian: $lint"
	assert_eq "" "$(grep -E '^[EW]: ' <<<"$lint" || true)" "lintian reports no error or warning"
elif [ "${DBCRON_REQUIRE_DEB:-0}" = 1 ]; then
	fail "lintian is missing (bash scripts/deps.sh --with-deb)"
fi

t_section "the unpacked programs run"
root=$T_DIR/root
for p in dbcron libdbcron0 libdbcron-dev; do
	dpkg-deb -x "$T_DIR/deb/${p}_${v}_$a.deb" "$root"
done
assert_eq "dbcron $v" "$("$root/usr/bin/dbcron" --version)" "dbcron --version"
assert_match "$(cat "$root/lib/systemd/system/dbcron-node.service")" "^ExecStart=/usr/bin/dbcron node " \
	"the unit runs /usr/bin/dbcron"
rc=0
"$root/usr/bin/dbcron" --config "$root/etc/dbcron/dbcron.conf.example" config show >/dev/null || rc=$?
assert_eq 0 "$rc" "the packaged example configuration reads"
libdir=$(dirname "$(find "$root/usr/lib" -name dbcron.pc)")
cat >"$T_DIR/p.c" <<'C'
#include <stdio.h>
#include <dbcron/dbcron.h>
int main(void) { puts(dbcron_version()); return 0; }
C
export PKG_CONFIG_PATH=$libdir PKG_CONFIG_SYSROOT_DIR=$root
rc=0
# shellcheck disable=SC2046
cc -std=c11 -o "$T_DIR/p" "$T_DIR/p.c" $(pkg-config --cflags --libs dbcron) 2>"$T_DIR/cc.err" || rc=$?
assert_eq 0 "$rc" "a program builds against libdbcron-dev: $(head -3 "$T_DIR/cc.err")"
assert_eq "$v" "$(LD_LIBRARY_PATH=$(dirname "$libdir") "$T_DIR/p" 2>&1)" "and runs on libdbcron0"

t_done
