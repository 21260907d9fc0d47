#!/usr/bin/env bash
# The dashboard in a real browser: headless Chromium (Debian's chromium)
# loads the page a node serves, is given an admin token through the form,
# shows the jobs and their runs, a click on Trigger makes a run that the
# runs view then shows and the run log holds, and the page fetched nothing
# from any other origin.  The screenshot is kept as build/dashboard.png.
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
t_bg "$DBCRON_BIN" node --node-id dash --http 127.0.0.1:0 --api-token-file "$T_DIR/tokens" \
	2>"$T_DIR/node.log"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$T_DIR/node.log" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of)" ]; }
wait_until 30 has_port || { cat "$T_DIR/node.log"; exit 1; }
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

t_done
