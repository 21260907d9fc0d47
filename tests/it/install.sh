#!/usr/bin/env bash
# make install's result, installed into a DESTDIR under a prefix other than
# the configured one: every file where it belongs and naming that prefix; a
# small C program built against the installed library through pkg-config
# runs and agrees with `dbcron cron next` (the static archive is checked to
# hold the API: linking it whole needs static builds of libpq's own
# dependencies, which Debian does not ship); the man
# page renders without a warning; bash completion completes; the systemd
# unit passes systemd-analyze verify without a message.
set -euo pipefail
source "$DBCRON_TESTLIB"

BUILD=$(cd "$(dirname "$DBCRON_BIN")/.." && pwd)
ROOT=$T_DIR/root
PREFIX=/opt/dbcron-it
P=$ROOT$PREFIX

t_section "install into DESTDIR"
rc=0
DESTDIR=$ROOT cmake --install "$BUILD" --prefix "$PREFIX" >"$T_DIR/install.log" 2>&1 || rc=$?
assert_eq 0 "$rc" "cmake --install: $(tail -3 "$T_DIR/install.log")"
libdir=$(sed -n 's/^libdir=//p' "$(find "$P" -name dbcron.pc)")
lib=${libdir#"$PREFIX"/}
for f in bin/dbcron libexec/dbcron/dbcron-guard "$lib/libdbcron.so.0" "$lib/libdbcron.a" \
	include/dbcron/dbcron.h include/dbcron/node.h "$lib/pkgconfig/dbcron.pc" \
	share/man/man1/dbcron.1 share/man/man5/dbcron.conf.5 share/bash-completion/completions/dbcron \
	share/zsh/vendor-completions/_dbcron lib/systemd/system/dbcron-node.service \
	lib/sysusers.d/dbcron.conf share/doc/dbcron/cli.md etc/dbcron/dbcron.conf.example; do
	test -e "$P/$f" && assert_eq 0 0 || assert_eq "$f" "missing" "installed: $f"
done
nothing_outside=$(cd "$ROOT" && find . -type f ! -path "./${PREFIX#/}/*" | head -3)
assert_eq "" "$nothing_outside" "every file under the prefix"
assert_match "$(cat "$P/lib/systemd/system/dbcron-node.service")" "^ExecStart=$PREFIX/bin/dbcron node "
assert_contains "$(cat "$P/$lib/pkgconfig/dbcron.pc")" "prefix=$PREFIX"
assert_eq "dbcron 0.1.0" "$("$P/bin/dbcron" --version)" "the installed binary runs"
# the installed node finds its guard in libexec/dbcron (not beside it):
# a shell job's guard is that program, not a fork of dbcron
"$P/bin/dbcron" init --db "sqlite:$T_DIR/inst.db" >/dev/null
"$P/bin/dbcron" job add g --every 1s --db "sqlite:$T_DIR/inst.db" -- sleep 5 >/dev/null
t_bg "$P/bin/dbcron" node --db "sqlite:$T_DIR/inst.db" --node-id inst --grace 1s --quiet
guard_from_libexec() {
	local p
	for p in $(pgrep -x dbcron-guard || true); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$P/libexec/dbcron/dbcron-guard" ] && return 0
	done
	return 1
}
wait_until 120 guard_from_libexec || fail "the installed node did not run its guard from $P/libexec/dbcron"
pass "the installed node runs the guard from libexec/dbcron"
kill -TERM "$T_BG_PID"
wait "$T_BG_PID" || true

t_section "the example configuration file is valid, commented and uncommented"
ex=$P/etc/dbcron/dbcron.conf.example
expect_rc 0 --config "$ex" config show
# every setting uncommented, but one of db and db-file
sed -E -e 's/^#([a-z-]+ = )/\1/' -e '/^db-file = /d' "$ex" >"$T_DIR/all.conf"
assert_contains "$(cat "$T_DIR/all.conf")" "api-token-file = " "the example was uncommented"
expect_rc 0 --config "$T_DIR/all.conf" config show
assert_contains "$T_OUT" "all.conf:" "config show reads the uncommented example"

t_section "a C program through pkg-config"
cat >"$T_DIR/prog.c" <<'EOF'
#include <inttypes.h>
#include <stdio.h>
#include <dbcron/dbcron.h>

int main(int argc, char **argv)
{
	dbcron_cron *c = NULL;
	dbcron_err err = {0};
	int64_t next = 0;
	if (argc != 3 || dbcron_cron_parse(argv[1], &c, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	if (dbcron_cron_next(c, NULL, (int64_t)atoll(argv[2]), &next) != 1)
		return 1;
	printf("%" PRId64 "\n", next);
	dbcron_cron_free(c);
	return 0;
}
EOF
sed -i 's/#include <stdio.h>/#include <stdio.h>\n#include <stdlib.h>/' "$T_DIR/prog.c"
export PKG_CONFIG_PATH=$P/$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
assert_eq "0.1.0" "$(pkg-config --modversion dbcron)" "pkg-config knows dbcron"
rc=0
# shellcheck disable=SC2046
# (a sanitizer build's library needs its runtime in the program too)
cc -std=c11 -Wall -Werror ${DBCRON_SANFLAGS:-} -o "$T_DIR/prog" "$T_DIR/prog.c" $(pkg-config --cflags --libs dbcron) \
	2>"$T_DIR/cc.log" || rc=$?
assert_eq 0 "$rc" "compiles and links against the installed library: $(head -5 "$T_DIR/cc.log")"
want=$("$DBCRON_BIN" cron next '0 30 2 * * ?' --from 1767323045 --format epoch)
got=$(LD_LIBRARY_PATH=$P/$lib "$T_DIR/prog" '0 30 2 * * ?' 1767323045 || true)
assert_eq "$want" "$got" "the program's next fire is dbcron's"
assert_contains "$(LD_LIBRARY_PATH=$P/$lib ldd "$T_DIR/prog")" "$P/$lib/libdbcron.so.0" \
	"the program uses the installed shared library"

assert_contains "$(nm -g --defined-only "$P/$lib/libdbcron.a" 2>/dev/null)" " T dbcron_cron_parse" \
	"the static archive holds the API"
# The archive linked whole: libdbcron from libdbcron.a, and the libraries
# dbcron.pc names as Requires.private shared (Debian ships no static libpq
# dependencies such as libpgcommon, so `pkg-config --static` cannot link).
# It then runs with no LD_LIBRARY_PATH, so no libdbcron.so can answer.
rc=0
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror ${DBCRON_SANFLAGS:-} -o "$T_DIR/prog-static" "$T_DIR/prog.c" $(pkg-config --cflags dbcron) \
	$(pkg-config --libs-only-L dbcron) -Wl,-Bstatic -ldbcron -Wl,-Bdynamic \
	$(pkg-config --libs $(pkg-config --print-requires-private dbcron)) -lpthread -lm \
	2>"$T_DIR/cc-static.log" || rc=$?
assert_eq 0 "$rc" "links the static archive with what dbcron.pc requires: $(head -5 "$T_DIR/cc-static.log")"
got=$("$T_DIR/prog-static" '0 30 2 * * ?' 1767323045 || true)
assert_eq "$want" "$got" "the statically linked program's next fire is dbcron's"
assert_not_contains "$(ldd "$T_DIR/prog-static")" "libdbcron" "the static program needs no libdbcron.so"

t_section "the man page renders without warnings"
for page in "$P"/share/man/man*/*; do
	warn=$(groff -ww -man -Tutf8 -z "$page" 2>&1)
	assert_eq "" "$warn" "groff -ww $(basename "$page")"
	out=$(MANWIDTH=80 man -l "$page" 2>"$T_DIR/man.err")
	assert_eq "" "$(cat "$T_DIR/man.err")" "man -l $(basename "$page"): nothing on stderr"
	case $page in
	*.1) assert_contains "$out" "dbcron job import-crontab" ;;
	*.5) assert_contains "$out" "/etc/dbcron/dbcron.conf.d/" ;;
	esac
	assert_not_contains "$out" "@PROJECT_"
	assert_not_contains "$out" "@CMAKE_"
done

t_section "bash completion"
got=$(bash -c 'source "$1"; COMP_WORDS=(dbcron job im); COMP_CWORD=2; _dbcron; echo "${COMPREPLY[*]}"' _ \
	"$P/share/bash-completion/completions/dbcron")
assert_eq "import-crontab" "$got" "dbcron job im<TAB>"
got=$(bash -c 'source "$1"; COMP_WORDS=(dbcron node --gr); COMP_CWORD=2; _dbcron; echo "${COMPREPLY[*]}"' _ \
	"$P/share/bash-completion/completions/dbcron")
assert_eq "--grace" "$got" "dbcron node --gr<TAB>"

t_section "the systemd unit"
unit=$P/lib/systemd/system/dbcron-node.service
assert_contains "$(cat "$unit")" "Type=notify"
assert_contains "$(cat "$unit")" "WatchdogSec="
assert_contains "$(cat "$unit")" "ProtectSystem=strict"
if ! command -v systemd-analyze >/dev/null; then
	echo "# install: systemd-analyze not installed: the unit is not verified"
else
	# verify wants ExecStart= to exist: the same unit, its program named
	# where the DESTDIR holds it; a value systemd cannot parse is only a
	# message, so any output fails too
	mkdir -p "$T_DIR/unit"
	sed "s|^ExecStart=$PREFIX/|ExecStart=$P/|" "$unit" >"$T_DIR/unit/dbcron-node.service"
	rc=0
	systemd-analyze verify --man=no "$T_DIR/unit/dbcron-node.service" >"$T_DIR/verify.log" 2>&1 || rc=$?
	assert_eq 0 "$rc" "systemd-analyze verify: $(cat "$T_DIR/verify.log")"
	assert_eq "" "$(cat "$T_DIR/verify.log")" "systemd-analyze verify says nothing"
fi
t_done
