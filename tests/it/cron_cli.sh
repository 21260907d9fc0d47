#!/usr/bin/env bash
# `dbcron cron next` against every reference case (Quartz 2.3, cronie rules,
# DST table) through the real binary, and `cron next|check` on bad input:
# exit status 2 and a message naming the field.
set -euo pipefail
: "${DBCRON_BIN:?}" "${DBCRON_SRC:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cases=0 bad=0 seen=0
# Under a sanitizer every 10th case goes through the binary (the CLI's path
# is the same for each); test_cron_ref checks all of them in-process there.
step=1
[ -z "${DBCRON_SANFLAGS:-}" ] || step=10
for f in "$DBCRON_SRC"/tests/data/cron_{quartz,unix,dst}_ref.tsv; do
  while IFS=$'\t' read -r expr zone from fires; do
    case "$expr" in ''|'#'*) continue ;; esac
    seen=$((seen + 1))
    [ $((seen % step)) -eq 0 ] || continue
    want=${fires%,end}; want=${want%end}
    # one process a case (the binary), not four: 670 cases
    IFS=, read -ra w <<<"$want"; n=${#w[@]}; [ "$n" -gt 0 ] || n=1
    mapfile -t g < <("$DBCRON_BIN" cron next "$expr" --tz "$zone" --from "$from" --count "$n" --format epoch)
    got=$(IFS=,; echo "${g[*]}")
    cases=$((cases + 1))
    if [ "$got" != "$want" ]; then
      bad=$((bad + 1))
      echo "mismatch: '$expr' $zone from $from: want $want got $got" >&2
    fi
  done < "$f"
done
[ "$seen" -ge 500 ] && [ "$cases" -ge $((seen / step)) ] || fail "only $cases of $seen reference cases run"
[ "$bad" -eq 0 ] || fail "$bad of $cases reference cases differ"
echo "ok - cron next agrees with the references on $cases cases"

expect_bad() {
  local want=$1; shift
  local out rc=0
  out=$("$DBCRON_BIN" cron "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 2 ] || fail "cron $*: exit $rc, want 2"
  case "$out" in *"$want"*) echo "ok - cron $* -> $out" ;; *) fail "cron $*: message '$out' lacks '$want'" ;; esac
}
expect_bad "field 1 (second)" next '*/0 * * * * ?'
expect_bad "field 2 (minute)" next '0 1,,2 * * * ?'
expect_bad "field 6 (day-of-week)" next '0 0 0 ? * MONDAY'
expect_bad "field 4 (day-of-month): 32" check '0 0 0 32 * ?'
expect_bad "field 1 (minute)" next '61 * * * *'
expect_bad "fields" next '0 0 0 * * ? 2030 extra'
expect_bad "Mars/Base" next '0 0 * * * ?' --tz Mars/Base
expect_bad "--count" next '0 0 * * * ?' --count 0
expect_bad "--from" next '0 0 * * * ?' --from yesterday
expect_bad "unknown" next '0 0 * * * ?' --frobnicate
out=$("$DBCRON_BIN" cron next '0 0 0 30 2 ?')
[ -z "$out" ] || fail "never-firing expression printed '$out'"
echo "ok - a never-firing expression prints nothing and exits 0"
echo "cron_cli: all checks passed"
