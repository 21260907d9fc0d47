#!/usr/bin/env bash
# docs/openapi.json against the server: every route the router serves is in
# it (the path literals and job verbs of src/http/routes.c, the dashboard's
# files), and every operation in it is served by a real `dbcron serve`:
# never "no such resource", and where the router answers 405 its Allow
# header names exactly the methods the file gives that path.
set -euo pipefail
source "$DBCRON_TESTLIB"

SPEC=$DBCRON_SRC/docs/openapi.json
export DBCRON_DB=sqlite:$T_DIR/t.db
expect_rc 0 init
expect_rc 0 job add tick --every 1h -- true
t_bg "$DBCRON_BIN" serve --http 127.0.0.1:0 2>"$T_DIR/serve.log"
port_of() { grep -o 'event=http.listen .*port=[0-9]*' "$T_DIR/serve.log" | grep -o '[0-9]*$' | head -1; }
has_port() { [ -n "$(port_of)" ]; }
wait_until 120 has_port || { cat "$T_DIR/serve.log"; exit 1; }

t_section "the router's routes are in the file"
RC=0
OUT=$(python3 - "$SPEC" "$DBCRON_SRC/src/http/routes.c" "$DBCRON_SRC/src/http/assets" <<'PY' 2>&1) || RC=$?
import json, os, re, sys
spec, src, assets = sys.argv[1:4]
paths = set(json.load(open(spec))["paths"])
segs = {s for p in paths for s in p.split("/") if s}
code = open(src).read()
missing = []
# every path literal the router compares with ("/jobs", "/next", ...)
for lit in sorted(set(re.findall(r'"(/[a-z]+)/?"', code))):
    if lit == "/api" or lit.startswith("/index"):
        continue
    if lit[1:] not in segs:
        missing.append("segment " + lit)
# every verb of a job
for verb in sorted(set(re.findall(r'strcmp\(verb, "([a-z]+)"\)', code))):
    if "/api/v1/jobs/{name}/" + verb not in paths:
        missing.append("verb " + verb)
for f in sorted(os.listdir(assets)):
    if "/" + f not in paths:
        missing.append("asset /" + f)
if len(segs) < 10 or not re.search(r'strcmp\(verb, "trigger"\)', code):
    missing.append("(the scan found too little: has routes.c changed shape?)")
print("\n".join(missing))
sys.exit(1 if missing else 0)
PY
assert_eq 0 "$RC" "routes missing from docs/openapi.json: $OUT"

t_section "every operation in the file is served"
RC=0
OUT=$(python3 - "$SPEC" "$(port_of)" <<'PY' 2>&1) || RC=$?
import json, sys, urllib.request, urllib.error
spec = json.load(open(sys.argv[1]))
port = sys.argv[2]
bad = []
n = 0
for path, ops in sorted(spec["paths"].items()):
    url = "http://127.0.0.1:%s%s" % (port, path.replace("{name}", "tick").replace("{id}", "1"))
    methods = {m.upper() for m in ops if m in ("get", "put", "post", "delete")}
    for m in sorted(methods | {"PATCH"}):
        req = urllib.request.Request(url, method=m, data=b"{}" if m in ("PUT", "POST") else None)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, body, allow = r.status, r.read(), r.headers.get("Allow")
        except urllib.error.HTTPError as e:
            status, body, allow = e.code, e.read(), e.headers.get("Allow")
        n += 1
        if m == "PATCH":
            if path.startswith("/api/") or path in ("/healthz", "/readyz", "/metrics"):
                got = {a.strip() for a in (allow or "").split(",") if a.strip()}
                if status != 405 or got != methods:
                    bad.append("%s %s: %d, Allow %r; the file gives %s" % (m, path, status, allow, sorted(methods)))
            continue
        if status == 405 or (status == 404 and b"no such resource" in body):
            bad.append("%s %s: %d %s" % (m, path, status, body[:120]))
print("%d requests" % n)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
assert_eq 0 "$RC" "operations the server does not serve: $OUT"

t_section "the server serves this document, and an OpenAPI linter passes it"
curl -sf -o "$T_DIR/served.json" -D "$T_DIR/served.h" "http://127.0.0.1:$(port_of)/api/v1/openapi.json" ||
	fail "GET /api/v1/openapi.json failed"
cmp -s "$SPEC" "$T_DIR/served.json" && pass "GET /api/v1/openapi.json is docs/openapi.json" ||
	fail "GET /api/v1/openapi.json differs from docs/openapi.json"
assert_match "$(cat "$T_DIR/served.h")" "Content-Type: application/json" "served as JSON"
# Redocly's linter (scripts/deps.sh installs it with npm into tools/npm),
# its recommended rules with redocly.yaml's one exception; a warning fails
LINT=$DBCRON_SRC/tools/npm/node_modules/.bin/redocly
if [ -x "$LINT" ]; then
	RC=0
	OUT=$(cd "$T_DIR" && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		timeout 300 "$LINT" lint --config "$DBCRON_SRC/redocly.yaml" --max-problems 50 \
		--format stylish "$T_DIR/served.json" 2>&1) || RC=$?
	assert_eq 0 "$RC" "redocly lint: $(grep -vE '[║╔╚]' <<<"$OUT" | tail -n 30)"
	# (the lines of a boxed notice about Node.js versions left out)
	assert_not_contains "$(grep -vE '[║╔╚]' <<<"$OUT")" "warning" "redocly lint: no warning"
elif [ "${DBCRON_REQUIRE_LINT:-0}" = 1 ]; then
	fail "the OpenAPI linter is missing: bash scripts/deps.sh"
else
	echo "# the OpenAPI linter is not installed (bash scripts/deps.sh installs it): not run"
fi
kill "$T_BG_PID"
wait "$T_BG_PID" || true

t_done
