#!/usr/bin/env bash
# Exclusion calendars (issue 28 item 7): `calendar add` refuses a bad line
# naming the file and the line, writing nothing; list, show and delete
# (refused while a job excludes it); --exclude-calendar refuses an unknown
# calendar; `job show` previews the next fires without the excluded days,
# in the job's zone; and a node does not fire a job on an excluded day
# (today) while a control job runs, then fires it once the calendar is
# taken off.  Executions are counted from what the jobs write.  SQLite;
# job_calendar_pg.sh and job_calendar_mysql.sh on PostgreSQL and MariaDB.
source "$(dirname "$0")/nodelib.bash"
use_backend "${1:-sqlite}"

t_section "bad input refused, nothing written"
printf '# holidays\n2031-12-24\n2031-12-25  # Christmas\n\n2031-02-30\n' >"$T/bad.txt"
t_refused "bad.txt:5: '2031-02-30' is not a day" calendar add hol --dates "$T/bad.txt"
t_refused "--dates FILE is required" calendar add hol
t_refused "no calendar named 'hol'" job add j --cron '0 9 * * *' --exclude-calendar hol -- true
pass "a bad day, no file and an unknown calendar are refused"

t_section "add, list, show; job show skips the days in the job's zone"
printf '# holidays\n2031-12-25  # Christmas\n2031-12-24\n\n2031-12-26\n2031-12-25\n' >"$T/hol.txt"
dbc calendar add hol --dates "$T/hol.txt" >/dev/null
assert_contains "$(dbc calendar list)" "hol                            3"
assert_eq "$(printf '2031-12-24\n2031-12-25\n2031-12-26')" "$(dbc calendar show hol)" "the days, sorted, once each"
expect_rc 2 calendar add hol --dates "$T/hol.txt"
assert_err_contains "calendar 'hol' already exists"
dbc job add j --cron '0 9 * * *' --tz Asia/Tokyo --start-at 2031-12-22T00:00:00Z \
	--exclude-calendar hol -- true >/dev/null
fires=$(dbc job show j --format json | grep -o '"local":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' ')
assert_eq "2031-12-22T09:00:00.000+09:00 2031-12-23T09:00:00.000+09:00 2031-12-27T09:00:00.000+09:00 2031-12-28T09:00:00.000+09:00 2031-12-29T09:00:00.000+09:00 " \
	"$fires" "next fires without the 24th to the 26th (Tokyo days)"
assert_contains "$(dbc job show j --format json)" '"exclude-calendar":"hol"'
assert_eq "$(printf '2031-12-23T09:00:00+09:00\n2031-12-27T09:00:00+09:00')" \
	"$(dbc cron next --job j --count 2 --from 2031-12-22T12:00:00Z)" "cron next --job skips them too"
expect_rc 1 calendar delete hol
assert_err_contains "calendar 'hol' is excluded by j"
assert_contains "$(dbc calendar list)" "hol"
dbc job set j --exclude-calendar '' >/dev/null
assert_contains "$(dbc job show j)" "2031-12-24T09:00:00+09:00"
dbc calendar delete hol >/dev/null
assert_eq "" "$(dbc calendar list | tail -n +2)" "no calendar left"
pass "calendars listed, shown, refused while used, deleted"

t_section "a node does not fire on an excluded day"
date -u +%F >"$T/today.txt"
dbc calendar add today --dates "$T/today.txt" >/dev/null
dbc job add off --every 1s --misfire skip --exclude-calendar today -- sh -c 'echo x >> '"$T/off.log" >/dev/null
dbc job add ref --every 1s --misfire skip -- sh -c 'echo x >> '"$T/ref.log" >/dev/null
assert_contains "$(dbc job show off)" "next fire:         $(date -u -d tomorrow +%F)T00:00:00"
start_node n1
wait_until 30 sh -c "[ \$(wc -l 2>/dev/null < '$T/ref.log' || echo 0) -ge 3 ]" || fail "the control job did not run"
[ -e "$T/off.log" ] && fail "the job fired on an excluded day"
dbc job set off --exclude-calendar '' >/dev/null
wait_until 30 test -s "$T/off.log" || fail "the job did not fire once the calendar was taken off"
stop_node n1
pass "no fire on the excluded day; fires once it is taken off"
t_done
