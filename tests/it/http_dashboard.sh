#!/usr/bin/env bash
# The dashboard in a real browser: headless Chromium (Debian's chromium)
# loads the page a node serves, is given an admin token through the form,
# shows the jobs and their runs, a click on Trigger makes a run that the
# runs view then shows and the run log holds, and the page fetched nothing
# from any other origin.  The screenshots are kept as build/dashboard.png
# (the runs view) and build/dashboard-jobs.png (the jobs view).
# The jobs view says a cron job's schedule in words, its next fire in its
# zone and from now, and a job's last run.  Then 10,000 jobs: the first
# page renders and Next shows the second (the times are reported, not
# asserted).
# Then the job form and actions (dashboard_drive.py --crud): an invalid
# cron and a taken name show the server's error at the field and write
# nothing; create, edit (keyboard), trigger (the run in the database and in
# the job's strip of last fires), the charts, pause, delete, name search.
# And three actions: a trigger with parameters (the run's params in the
# database; an undeclared key refused at the field, no run), Cancel of a
# running run (runs view) and of a waiting one (its page), both cancelled in
# the database, a stale Cancel showing the server's 409, and the failed
# deliveries view listing flop's event (state failed, 5 attempts, its error).
set -euo pipefail
source "$DBCRON_TESTLIB"

CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || { echo "chromium is required (scripts/deps.sh)" >&2; exit 1; }
export DBCRON_DB=sqlite:$T_DIR/t.db
SHOT=$(dirname "$(dirname "$DBCRON_BIN")")/dashboard.png
ADMIN=admin-token-0123456789abcdef
echo "$ADMIN admin" >"$T_DIR/tokens"

expect_rc 0 init
expect_rc 0 job add tick --every 1s -- echo tick
expect_rc 0 job add quiet --every 1h -- echo quiet
expect_rc 0 job add noon --cron '0 0 12 1 1 ?' --tz Europe/Berlin -- echo noon
# for the three actions (dashboard_drive.py --crud): a job that declares its
# parameters, a long one to cancel, a paused one whose run waits (scheduled),
# and one that fails with a reaction no one receives; its delivery is
# refused, retried 4 times (1+2+4+8 s) and failed while the first steps run
expect_rc 0 job add deploy --cron '0 0 12 1 1 ?' --params region=eu,dry_run -- sh -c 'echo "$DBCRON_PARAM_region"'
expect_rc 0 job add nap --cron '0 0 12 1 1 ?' --retries 0 -- sleep 30
expect_rc 0 job add held --cron '0 0 12 1 1 ?' -- echo held
expect_rc 0 job pause held
expect_rc 0 job add flop --cron '0 0 12 1 1 ?' --retries 0 --on-failure http://127.0.0.1:1/ -- false
expect_rc 0 job trigger flop
t_bg "$DBCRON_BIN" node --node-id dash --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" \
	2>"$T_DIR/node.log"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$T_DIR/node.log" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of)" ]; }
wait_until 120 has_port || { cat "$T_DIR/node.log"; exit 1; }
PORT=$(port_of)

t_section "the page in Chromium"
rm -f "$SHOT"
RC=0
RUN=$(python3 "$DBCRON_SRC/tests/tools/dashboard_drive.py" "$CHROMIUM" "http://127.0.0.1:$PORT/" \
	"$ADMIN" "$SHOT" "$T_DIR/chrome" 2>"$T_DIR/drive.err") || RC=$?
assert_eq 0 "$RC" "the browser steps ($(cat "$T_DIR/drive.err"))"
assert_match "$RUN" '^[0-9]+$'
dbc runs --job quiet --format csv --limit 0
assert_contains "$T_OUT" ",$RUN," "the clicked trigger's run is in the run log"
if [ -s "$SHOT" ] && [ "$(head -c 8 "$SHOT" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
	_t_pass
else
	_t_fail "no PNG screenshot at $SHOT"
fi

t_section "create, refuse, edit, trigger, pause and delete through the page"
# each write checked against the database by the driver itself (dbcron job
# show / job list / runs); screenshots of each view into build/dashboard/
# (`make screenshots` copies them to docs/dashboard/)
SHOTS=$(dirname "$(dirname "$DBCRON_BIN")")/dashboard
mkdir -p "$SHOTS"
rm -f "$SHOTS"/*.png
RC=0
RUN2=$(python3 "$DBCRON_SRC/tests/tools/dashboard_drive.py" --crud "$CHROMIUM" "http://127.0.0.1:$PORT/" \
	"$ADMIN" "$T_DIR/chrome3" "$SHOTS" 2>"$T_DIR/drive3.err") || RC=$?
assert_eq 0 "$RC" "the form and the actions ($(cat "$T_DIR/drive3.err"))"
assert_match "$RUN2" '^[0-9]+$'
for v in edit-error edit jobs job run charts edit-narrow jobs-narrow trigger trigger-error runs-cancel \
	run-cancelled events trigger-narrow events-narrow; do
	if [ "$(head -c 8 "$SHOTS/$v.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
		_t_pass
	else
		_t_fail "no PNG screenshot of the $v view at $SHOTS/$v.png"
	fi
done
dbc job show made
assert_ne 0 "$T_RC" "made was deleted through the page"

t_section "10,000 jobs"
python3 -c 'import json; print(json.dumps([{"name": "j%05d" % i, "every": "1h", "command": ["true"]} for i in range(10000)]))' \
	>"$T_DIR/many.json"
expect_rc 0 init --db "sqlite:$T_DIR/many.db"
expect_rc 0 job apply "$T_DIR/many.json" --db "sqlite:$T_DIR/many.db"
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 --db "sqlite:$T_DIR/many.db" 2>"$T_DIR/serve.log"
serve_port() { grep -o 'event=http.listen .*port=[0-9]*' "$T_DIR/serve.log" | grep -o '[0-9]*$' | head -1; }
has_serve_port() { [ -n "$(serve_port)" ]; }
wait_until 120 has_serve_port || { cat "$T_DIR/serve.log"; exit 1; }
RC=0
TIMES=$(python3 "$DBCRON_SRC/tests/tools/dashboard_drive.py" --paging "$CHROMIUM" \
	"http://127.0.0.1:$(serve_port)/" "$T_DIR/chrome2" j00000 j00100 2>"$T_DIR/drive2.err") || RC=$?
assert_eq 0 "$RC" "first page, then Next, of 10,000 jobs ($(cat "$T_DIR/drive2.err"))"
assert_match "$TIMES" '^[0-9]+ [0-9]+$'
read -r FIRST_MS NEXT_MS <<<"$TIMES"
echo "# 10,000 jobs: first page rendered ${FIRST_MS} ms after navigation, the next ${NEXT_MS} ms after the click"

t_done
