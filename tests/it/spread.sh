#!/usr/bin/env bash
# Spread (issue 28 item 1, docs/cron.md "H: spread by name"): 1,000 jobs
# `H * * * *` applied at once are level over the hour (every minute within
# 20 % of 1000/60), read from the database; a job's H value survives edits
# of other fields, a re-apply and an export applied elsewhere; a job given
# `H * * * *` later takes a least-used minute; --spread levels --every
# jobs the same way; the retry flag's old name still works; bad input is
# refused with exit 2 and nothing written.  SQLite only: the seeds are
# chosen above the store (app/spread.c) and kept in a plain BIGINT column
# whose round trip the store conformance tests check on every backend.
set -euo pipefail
source "$DBCRON_TESTLIB"

URL=$(t_fresh_url sqlite dbcron_spread)
URL2=$(t_fresh_url sqlite dbcron_spread2)
t_use_db sqlite "$URL"
export DBCRON_DB=$URL

expect_rc 0 init
expect_rc 0 init --db "$URL2"

# minute NAME: the minute of the hour of the job's stored next fire
minute() { dbq "select (next_fire_at / 60000) % 60 from jobs where name = '$1'"; }
# per-minute loads of the jobs whose spec is 'H * * * *', "minute count" lines
loads() { dbq "select (next_fire_at / 60000) % 60, count(*) from jobs where spec = 'H * * * *' group by 1 order by 1"; }
seeds() { dbq "select name || '=' || spread_seed || '@' || next_fire_at from jobs where spread_seed is not null order by name" | sha256sum; }

# ---------------------------------------------------------------------
t_section "1,000 jobs 'H * * * *' in one apply: level over the hour"
/usr/bin/python3 -c '
import json
print(json.dumps([{"name": "h%04d" % i, "cron": "H * * * *", "command": ["/bin/true"]}
                  for i in range(1000)]))' >"$T_DIR/h.json"
expect_rc 0 job apply "$T_DIR/h.json"
assert_contains "$T_OUT" "1000 created"
assert_eq 1000 "$(dbq "select count(*) from jobs where spread_seed is not null and spread_seed >= 0")" \
	"every H job has a stored seed"
L=$(loads)
assert_eq 60 "$(wc -l <<<"$L")" "every minute of the hour has jobs"
min=$(cut -d'|' -f2 <<<"$L" | sort -n | head -1)
max=$(cut -d'|' -f2 <<<"$L" | sort -n | tail -1)
echo "# per-minute jobs: min $min, max $max (level 16.7, bounds 14-20)"
assert_ge "$min" 14 "the least used minute is within 20 % of level"
assert_le "$max" 20 "the most used minute is within 20 % of level"
# the engine agrees with the stored next fire, through the job's seed
for j in h0000 h0417 h0999; do
	nf=$(dbq "select next_fire_at / 1000 from jobs where name = '$j'")
	expect_rc 0 cron next --job "$j" --from "$((nf - 1))" --format epoch
	assert_eq "$nf" "$T_OUT" "cron next --job $j gives the stored next fire"
done
expect_rc 0 job show h0417
assert_match "$T_OUT" "in words: +at minute $(minute h0417) \(H\) of every hour, every day"
assert_match "$T_OUT" "spread: +H from seed $(dbq "select spread_seed from jobs where name = 'h0417'")"
s=$(dbq "select spread_seed from jobs where name = 'h0417'")
expect_rc 0 cron next 'H * * * *' --seed "$s" --from "$(dbq "select next_fire_at / 1000 - 1 from jobs where name = 'h0417'")" --format epoch
assert_eq "$(dbq "select next_fire_at / 1000 from jobs where name = 'h0417'")" "$T_OUT" "--seed N: the same fire"

# ---------------------------------------------------------------------
t_section "stable: other fields, a re-apply, an export applied elsewhere"
before=$(seeds)
m=$(minute h0417)
expect_rc 0 job set h0417 --timeout 5s
assert_eq "$m" "$(minute h0417)" "job set --timeout keeps the minute"
expect_rc 0 job set h0417 --timeout 0s
expect_rc 0 job apply "$T_DIR/h.json"
assert_contains "$T_OUT" "1000 unchanged"
assert_eq "$before" "$(seeds)" "a re-apply keeps every seed and next fire"
# one job of the file alone: the other 999 are now stored, a choice made
# again would count them and land elsewhere; the stored seed is kept
/usr/bin/python3 -c 'import json; print(json.dumps([{"name": "h0417", "cron": "H * * * *", "command": ["/bin/true"]}]))' >"$T_DIR/one.json"
expect_rc 0 job apply "$T_DIR/one.json"
assert_eq "$before" "$(seeds)" "a re-apply of one job keeps its seed"
expect_rc 0 job export
printf '%s\n' "$T_OUT" >"$T_DIR/export.json"
assert_contains "$T_OUT" '"spread-seed":'
expect_rc 0 job apply --db "$URL2" "$T_DIR/export.json"
got=$(sq "$T_DIR/dbcron_spread2.db" "select name || '=' || spread_seed from jobs order by name" | sha256sum)
assert_eq "$(dbq "select name || '=' || spread_seed from jobs order by name" | sha256sum)" "$got" \
	"an export applied to another database keeps the seeds"

# ---------------------------------------------------------------------
t_section "a job given 'H * * * *' later takes a least-used minute"
expect_rc 0 job add late --every 1h -- /bin/true
for k in 1 2 3; do
	L=$(loads)
	least=$(cut -d'|' -f2 <<<"$L" | sort -n | head -1)
	expect_rc 0 job set late --cron 'H * * * *'
	m=$(minute late)
	assert_eq "$least" "$(grep "^$m|" <<<"$L" | cut -d'|' -f2)" "job set --cron 'H * * * *' picks a minute with the fewest jobs ($least)"
	# another schedule and back: a new choice, still a least-used one
	expect_rc 0 job set late --every 1h
	assert_eq "" "$(dbq "select spread_seed from jobs where name = 'late'")" "no H, no seed"
	expect_rc 0 job delete h000$k --force
done

# ---------------------------------------------------------------------
t_section "--spread: stable, level offsets for --every jobs"
/usr/bin/python3 -c '
import json
print(json.dumps([{"name": "e%02d" % i, "every": "1m", "spread": "1m", "command": ["/bin/true"]}
                  for i in range(60)]))' >"$T_DIR/e.json"
expect_rc 0 job apply "$T_DIR/e.json"
offsets() { dbq "select (anchor_ms % 60000) / 1000, count(*) from jobs where spread_ms = 60000 group by 1"; }
O=$(offsets)
assert_eq 60 "$(wc -l <<<"$O")" "60 jobs --spread 1m take 60 different seconds"
assert_eq 1 "$(cut -d'|' -f2 <<<"$O" | sort -n | tail -1)" "one job a second"
assert_eq 0 "$(dbq "select count(*) from jobs where spread_ms = 60000 and (next_fire_at - anchor_ms) % 60000 <> 0")" \
	"each next fire is on its series"
a=$(dbq "select anchor_ms || ' ' || next_fire_at from jobs where name = 'e07'")
expect_rc 0 job set e07 --retries 1
expect_rc 0 job apply "$T_DIR/e.json"
assert_eq "$a" "$(dbq "select anchor_ms || ' ' || next_fire_at from jobs where name = 'e07'")" \
	"job set and a re-apply keep the offset"
expect_rc 0 job show e07
assert_match "$T_OUT" "spread: +within 1m: offset [0-9]+s \(seed [0-9]+\)"

# ---------------------------------------------------------------------
t_section "--retry-jitter, its old name --jitter, --start-jitter"
expect_rc 0 job add rj --every 1m --jitter --start-jitter 10s -- /bin/true
assert_eq "1|10000" "$(dbq "select case when retry_jitter then 1 else 0 end || '|' || start_jitter_ms from jobs where name = 'rj'")"
expect_rc 0 job set rj --no-jitter
assert_eq 0 "$(dbq "select case when retry_jitter then 1 else 0 end from jobs where name = 'rj'")" "--no-jitter"
expect_rc 0 job set rj --retry-jitter
expect_rc 0 job export
assert_contains "$T_OUT" '"name":"rj","every":"1m","tz":"UTC","misfire":"fire_once","max-catchup":100,"misfire-threshold":"5s","overlap":"skip","node-loss":"retry","retries":3,"retry-base":"1m","retry-cap":"1h","retry-jitter":true,"start-jitter":"10s","timeout":"0s"'
echo '[{"name": "rk", "every": "1m", "jitter": true, "command": ["/bin/true"]}]' >"$T_DIR/rk.json"
expect_rc 0 job apply "$T_DIR/rk.json"
assert_eq 1 "$(dbq "select case when retry_jitter then 1 else 0 end from jobs where name = 'rk'")" "apply's old key 'jitter'"
expect_rc 0 job show rj
assert_match "$T_OUT" "start jitter: +a random delay of up to 10s before each run"

# ---------------------------------------------------------------------
t_section "bad input: exit 2, nothing written"
t_refused "field 7 (year): H cannot apply to the year field" job add y --cron '0 0 0 1 1 ? H' -- /bin/true
t_refused "range 'H(50-10)' runs backwards" job add y --cron 'H(50-10) * * * *' -- /bin/true
t_refused "step 0 in 'H/0' is out of range" job add y --cron 'H/0 * * * *' -- /bin/true
t_refused "H in day-of-month stays within 1-28" job add y --cron '0 0 H(1-31) * *' -- /bin/true
t_refused "--spread 2m is longer than --every 1m" job add y --every 1m --spread 2m -- /bin/true
t_refused "--spread is for --every jobs" job add y --cron '0 * * * *' --spread 1m -- /bin/true
t_refused "--spread is for --every jobs" job set h0500 --spread 1m
t_refused "--spread-seed: -3: expected 0 or more" job add y --cron 'H * * * *' --spread-seed -3 -- /bin/true
echo '[{"name": "y", "cron": "0 0 0 1 1 ? H", "command": ["/bin/true"]}]' >"$T_DIR/bad.json"
t_refused "H cannot apply to the year field" job apply "$T_DIR/bad.json"
t_refused "H needs a job: its value comes from the job's name (cron next --job NAME)" cron next 'H * * * *'
t_refused "H needs a job" cron check 'H * * * *'
t_refused "no job named 'nope'" cron next --job nope

t_done
