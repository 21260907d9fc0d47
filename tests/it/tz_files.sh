#!/usr/bin/env bash
# Bad zone data never crashes dbcron: TZDIR points at a private directory
# with truncated copies of a real zone file, garbage, an empty file and a
# directory; `cron next --tz`, `job add --tz`, `job apply` and a node whose
# stored job's zone went bad each give "zone 'X': ..." (or "unknown time
# zone") with a non-zero exit, write nothing, and never die of a signal.
set -euo pipefail
source "$DBCRON_TESTLIB"

real=/usr/share/zoneinfo/Europe/Berlin
[ -f "$real" ] || t_skip "no $real on this host"
size=$(stat -c %s "$real")

Z=$T_DIR/zones
mkdir -p "$Z/Bad" "$Z/Good"
cp "$real" "$Z/Good/Berlin"
for n in 0 10 44 45 100 500 $((size / 2)) $((size - 1)); do
	head -c "$n" "$real" >"$Z/Bad/Cut$n"
done
# the magic and then garbage; a header whose counts point past the end;
# random bytes; a valid file with one transition type out of range
printf 'TZif2%s' "$(head -c 200 /dev/zero | tr '\0' '\377')" >"$Z/Bad/Garbage"
{ printf 'TZif2'; head -c 15 /dev/zero; printf '\0\0\0\0\0\0\0\0\0\0\0\0\377\377\377\377\0\0\0\1\0\0\0\4'; } >"$Z/Bad/Counts"
head -c 3000 /dev/urandom >"$Z/Bad/Random"
timecnt=$(od -An -tu1 -j32 -N4 "$real" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
cp "$real" "$Z/Bad/Type"
printf '\310' | dd of="$Z/Bad/Type" bs=1 seek=$((44 + timecnt * 4)) conv=notrunc status=none
export TZDIR=$Z
export DBCRON_DB=sqlite:$T_DIR/t.db
expect_rc 0 init

# no_crash WHAT: the last command ended by exit, not by a signal
no_crash() {
	if [ "$T_RC" -ge 128 ]; then
		_t_fail "$1: killed by signal $((T_RC - 128))"
	else
		_t_pass
	fi
}

t_section "a good copy under TZDIR works"
expect_rc 0 cron next '0 0 12 * * ?' --tz Good/Berlin --from 2025-07-01T00:00:00Z
assert_eq "2025-07-01T12:00:00+02:00" "$T_OUT" "Good/Berlin is read from TZDIR"

t_section "cron next --tz with bad zone data"
for f in "$Z"/Bad/*; do
	name=Bad/$(basename "$f")
	expect_rc 2 cron next '0 0 12 * * ?' --tz "$name"
	no_crash "cron next --tz $name"
	assert_contains "$T_ERR" "zone '$name': $f is not a valid zone file: " "cron next --tz $name: what is wrong"
	assert_eq 1 "$(printf '%s\n' "$T_ERR" | wc -l)" "cron next --tz $name: one line, nothing from GLib"
done
expect_rc 2 cron next '0 0 12 * * ?' --tz Bad/Cut500
assert_contains "$T_ERR" "truncated" "a truncated file says so"
expect_rc 2 cron next '0 0 12 * * ?' --tz Bad/Random
assert_contains "$T_ERR" "not a TZif file" "garbage says it is not TZif"

t_section "names that are not zones"
expect_rc 2 cron next '0 0 12 * * ?' --tz Nowhere/Land
assert_contains "$T_ERR" "unknown time zone 'Nowhere/Land' (not in $Z;" "a zone this host does not have"
expect_rc 2 cron next '0 0 12 * * ?' --tz Bad
assert_contains "$T_ERR" "unknown time zone 'Bad' (a directory" "a directory is not a zone"
expect_rc 2 cron next '0 0 12 * * ?' --tz ../zones/Good/Berlin
assert_contains "$T_ERR" "unknown time zone '../zones/Good/Berlin'" "'..' is refused"
expect_rc 2 cron next '0 0 12 * * ?' --tz "$Z/Good/Berlin"
assert_contains "$T_ERR" "unknown time zone '$Z/Good/Berlin'" "absolute paths are refused"
# the real database is not consulted behind TZDIR's back
expect_rc 2 cron next '0 0 12 * * ?' --tz Europe/Paris
assert_contains "$T_ERR" "unknown time zone 'Europe/Paris' (not in $Z;" "only TZDIR is searched"

t_section "job validation: add and apply"
before=$(sq_hash "$T_DIR/t.db")
expect_rc 2 job add j1 --cron '0 0 12 * * ?' --tz Bad/Cut100 -- true
no_crash "job add --tz Bad/Cut100"
assert_contains "$T_ERR" "--tz: zone 'Bad/Cut100': " "job add names the flag and the zone"
expect_rc 2 job add j1 --cron '0 0 12 * * ?' --tz Bad/Garbage -- true
no_crash "job add --tz Bad/Garbage"
assert_contains "$T_ERR" "zone 'Bad/Garbage': " "job add: garbage"
printf '[{"name": "j2", "cron": "0 0 12 * * ?", "tz": "Bad/Counts", "command": ["true"]}]\n' >"$T_DIR/a.json"
expect_rc 2 job apply "$T_DIR/a.json"
no_crash "job apply with tz Bad/Counts"
assert_contains "$T_ERR" "job #1 ('j2'): key 'tz': zone 'Bad/Counts': " "job apply names the entry, key and zone"
assert_eq "$before" "$(sq_hash "$T_DIR/t.db")" "nothing written"

t_section "a node whose job's zone went bad does not crash"
# (The job is set aside with the zone's error and the others run on:
# tests/it/job_aside.sh; here: no crash, and the reason is the zone's.)
expect_rc 0 job add zoned --cron '* * * * * ?' --tz Good/Berlin -- true
head -c 700 "$real" >"$Z/Good/Berlin"
"$DBCRON_BIN" node --node-id tz1 >"$T_DIR/node.log" 2>&1 &
pid=$!
T_PIDS+=("$pid")
wait_until 120 grep -q "event=job.set_aside job=zoned" "$T_DIR/node.log" || true
assert_contains "$(cat "$T_DIR/node.log")" "event=job.set_aside job=zoned" "the node sets aside the job it cannot plan"
assert_contains "$(cat "$T_DIR/node.log")" "zone 'Good/Berlin'" "and says it is the zone"
if kill -0 "$pid" 2>/dev/null; then _t_pass; else _t_fail "the node died" "$(tail -n 5 "$T_DIR/node.log")"; fi
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq 0 "$rc" "the node stops cleanly"
assert_not_contains "$(cat "$T_DIR/node.log")" "GLib" "nothing from GLib in the node's log"

t_done
