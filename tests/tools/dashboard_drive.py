#!/usr/bin/env python3
"""Drive the dashboard in a real headless Chromium over the DevTools protocol.

  dashboard_drive.py CHROMIUM URL TOKEN SCREENSHOT PROFILE_DIR
  dashboard_drive.py --paging CHROMIUM URL PROFILE_DIR FIRST SECOND
  dashboard_drive.py --crud CHROMIUM URL TOKEN PROFILE_DIR SHOT_DIR

Loads URL, types TOKEN into the token form, waits for the jobs "tick" and
"quiet" and for runs of "tick", clicks quiet's Trigger button with real mouse
events, waits for the new run to show in the runs view, checks that the page
asked nothing of any other origin, and saves a screenshot.  Prints the new
run's id on stdout; exits 1 with the reason on stderr when a step fails.
On the way the jobs view must show the job "noon" (cron 0 0 12 1 1 ?, zone
Europe/Berlin) in words, its next fire at +01:00 and from now ("in 30d"),
and tick's last run as succeeded and how long ago; that view is saved
beside SCREENSHOT as NAME-jobs.png.

With --paging: loads URL, waits for a full first page of jobs whose first
row is FIRST, clicks Next, waits for the page whose first row is SECOND,
and prints the milliseconds each took (from navigation, from the click):
what a 10,000-job dashboard costs, reported, never asserted.  The
waits are hang guards (60 s), not timing checks.  Only the standard library:
the WebSocket client is the few lines the protocol needs.

With --crud (DBCRON_BIN and DBCRON_DB in the environment): the job form
refuses an invalid cron (the live preview's error, then the server's, at
the cron field) and a taken name (at the name field), writing nothing;
creates a job, edits its schedule with the keyboard, triggers it (the run
in the database and as a cell of its strip, the cell leads to its output),
shows the charts, pauses and deletes it (Delete asks twice), makes an
HTTP job (a bad call refused at its field) and changes it into a SQL job,
and finds a job by a part of its name; every write is checked with `dbcron job show`,
`job list` and `runs`.  Screenshots of each view go into SHOT_DIR.  Prints
the triggered run's id.  Then the three actions (actions()): the jobs
"deploy" (--params region=eu,dry_run), "nap" (sleep 30), "held" (paused)
and "flop" (failed, its on-failure delivery refused) must exist.
"""
import base64
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request

WAIT_S = 60


def fail(msg):
    print("dashboard: " + msg, file=sys.stderr)
    sys.exit(1)


class WS:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            c = self.s.recv(1)
            if not c:
                fail("devtools closed the connection during the handshake")
            head += c
        if b" 101 " not in head.split(b"\r\n")[0]:
            fail("devtools refused the websocket: %r" % head[:80])

    def _read(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                fail("devtools connection closed")
            b += c
        return b

    def send(self, text):
        data = text.encode()
        hdr = bytes([0x81])
        n = len(data)
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if (b0 & 0x0F) in (0x1, 0x0, 0x2):
                msg += payload
                if b0 & 0x80:
                    return msg.decode()


class CDP:
    def __init__(self, ws):
        self.ws, self.next_id, self.events = ws, 0, []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.next_id:
                if "error" in m:
                    fail("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            fail("page script failed: %s: %s" % (expr, r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def wait(self, expr, what):
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            v = self.js(expr)
            if v:
                return v
            time.sleep(0.2)
        fail("gave up waiting for " + what + "; status lines: %r" % self.js(
            "document.querySelector('#flash').textContent + ' | ' + document.querySelector('#status').textContent"))

    def click(self, selector):
        box = self.js("(() => { const e = document.querySelector(%s); if (!e) return null;"
                      " e.scrollIntoView(); const r = e.getBoundingClientRect();"
                      " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))
        if not box:
            fail("nothing to click at " + selector)
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=t, x=box[0], y=box[1], button="left",
                      clickCount=1)


def start(chromium, profile):
    """Chromium and a DevTools session on its page: (process, CDP)."""
    proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                             "--no-first-run", "--disable-extensions", "--user-data-dir=" + profile,
                             "--remote-debugging-port=0", "--window-size=1200,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.monotonic() + WAIT_S
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                fail("chromium exited with status %s before listening" % proc.returncode)
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            fail("chromium did not say where devtools listens")
        pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = next(p for p in pages if p.get("type") == "page")
        return proc, CDP(WS(page["webSocketDebuggerUrl"]))
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def paging(chromium, url, profile, first, second):
    proc, cdp = start(chromium, profile)
    try:
        rows = "document.querySelectorAll('#jobs tbody tr')"
        t0 = time.monotonic()
        cdp.call("Page.navigate", url=url)
        cdp.wait("(r => r.length === 100 && r[0].dataset.job === %s)(%s)" % (json.dumps(first), rows),
                 "a first page of 100 jobs from " + first)
        t1 = time.monotonic()
        if cdp.js("document.querySelector('#jobs-next').disabled"):
            fail("Next is disabled on the first of many pages")
        cdp.click("#jobs-next")
        cdp.wait("(r => r.length === 100 && r[0].dataset.job === %s)(%s)" % (json.dumps(second), rows),
                 "the second page from " + second)
        t2 = time.monotonic()
        if not cdp.js("/page 2/.test(document.querySelector('#status').textContent)"):
            fail("the status line does not say page 2")
        print("%d %d" % ((t1 - t0) * 1000, (t2 - t1) * 1000))
    finally:
        proc.kill()
        proc.wait()


def shoot(cdp, path):
    with open(path, "wb") as f:
        f.write(base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"]))


def dbc(*args):
    """dbcron's own answer (DBCRON_BIN, the database in DBCRON_DB): what the
    page shows is checked against the database, not against the page."""
    r = subprocess.run([os.environ["DBCRON_BIN"]] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout


def job_row(name):
    rc, out = dbc("job", "show", name, "--format", "json")
    return json.loads(out) if rc == 0 else None


def job_names():
    rc, out = dbc("job", "list", "--format", "json")
    if rc:
        fail("job list failed")
    j = json.loads(out)
    return sorted(x["name"] for x in (j["jobs"] if isinstance(j, dict) else j))


def type_into(cdp, selector, text):
    cdp.js("(e => { e.value = ''; e.focus(); })(document.querySelector(%s))" % json.dumps(selector))
    cdp.call("Input.insertText", text=text)


def key(cdp, k, code, vk):
    for t in ("rawKeyDown", "keyUp"):
        cdp.call("Input.dispatchKeyEvent", type=t, key=k, code=code, windowsVirtualKeyCode=vk)
    if k == "Enter":
        cdp.call("Input.dispatchKeyEvent", type="char", key=k, text="\r")


def text_of(selector):
    return "(e => e ? e.textContent : '')(document.querySelector(%s))" % json.dumps(selector)


def fill_form(cdp, name, kind, spec, command):
    cdp.wait("!document.querySelector('#view-edit').hidden", "the job form")
    type_into(cdp, "#e-name", name)
    cdp.js("(e => { e.value = %s; e.dispatchEvent(new Event('change')); })(document.querySelector('#e-kind'))"
           % json.dumps(kind))
    type_into(cdp, "#e-spec", spec)
    type_into(cdp, "#e-command", command)


def executors(cdp, profile, shots):
    """An HTTP job made through the form (a bad call refused at its field,
    nothing written), then changed into a SQL job: each checked in the
    database, the other executor's keys gone."""
    def pick(kind):
        cdp.js("(e => { e.value = %s; e.dispatchEvent(new Event('change')); })(document.querySelector('#e-exec'))"
               % json.dumps(kind))
        cdp.wait("!document.querySelector('[data-exec=%s]').hidden && "
                 "document.querySelector('[data-exec=command]').hidden" % kind, "the %s fields alone" % kind)
    cdp.js("location.hash = '#edit'")
    fill_form(cdp, "hook", "every", "1h", "")
    pick("http")
    type_into(cdp, "#e-http", "GET notaurl")
    cdp.click("#e-save")
    cdp.wait("%s !== ''" % text_of("#err-http"), "the server's error at the call field")
    if job_row("hook") is not None:
        fail("a bad call wrote a job")
    type_into(cdp, "#e-http", "POST http://127.0.0.1:1/hook")
    type_into(cdp, "#e-body", '{"a": 1}')
    shoot(cdp, os.path.join(shots, "edit-http.png"))
    cdp.click("#e-save")
    cdp.wait("location.hash === '#job/hook'", "the HTTP job's page")
    row = job_row("hook")
    if not row or row.get("http") != "POST http://127.0.0.1:1/hook" or row.get("body") != '{"a": 1}' \
            or "command" in row:
        fail("the HTTP job in the database: %r" % row)
    url_file = os.path.join(profile, "reports.url")
    with open(url_file, "w") as f:
        f.write("sqlite:" + os.path.join(profile, "reports.db") + "\n")
    # the form still holds what was typed: cleared, so the wait below is
    # for the stored job's values
    cdp.js("document.querySelector('#e-http').value = ''; location.hash = '#edit/hook'")
    cdp.wait("document.querySelector('#e-http').value === 'POST http://127.0.0.1:1/hook' && "
             "!document.querySelector('[data-exec=http]').hidden", "the form filled with hook's call")
    pick("sql")
    type_into(cdp, "#e-sql", "SELECT 1")
    type_into(cdp, "#e-sql-db-file", url_file)
    cdp.click("#e-save")
    cdp.wait("location.hash === '#job/hook'", "the SQL job's page")
    row = job_row("hook")
    if not row or row.get("sql") != "SELECT 1" or row.get("sql-db-file") != url_file \
            or "http" in row or "body" in row or "command" in row:
        fail("the SQL job in the database: %r" % row)
    dbc("job", "delete", "hook")


def run_row(run):
    """The run as `dbcron runs show ID --format json` has it (None: none)."""
    rc, out = dbc("runs", "show", str(run), "--format", "json")
    return json.loads(out) if rc == 0 else None


def run_count(job):
    rc, out = dbc("runs", "--job", job, "--format", "json", "--limit", "0")
    if rc:
        fail("runs --job %s failed" % job)
    j = json.loads(out)
    return len(j["runs"] if isinstance(j, dict) else j)


def wait_state(run, state):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        r = run_row(run)
        if r and r.get("state") == state:
            return r
        time.sleep(0.2)
    fail("run %s is not %s in the database: %r" % (run, state, run_row(run)))


def trigger_params(cdp, shots):
    """deploy's Trigger... form: prefilled with the declared keys and
    defaults; region=us makes a run whose params the database holds; an
    undeclared key (submitted with Enter) is refused at the rows, no run."""
    cdp.js("location.hash = '#jobs'")
    sel = 'tr[data-job="deploy"] a[data-action="trigger-params"]'
    cdp.wait("!!document.querySelector(%s)" % json.dumps(sel), "deploy's Trigger... link")
    cdp.click(sel)
    rows = "[...document.querySelectorAll('#t-rows .prow')].map(r => [r.querySelector('.pkey').value, r.querySelector('.pval').value])"
    got = cdp.wait("(r => r.length === 2 ? r : null)(%s)" % rows, "deploy's declared parameters in the form")
    if got != [["region", "eu"], ["dry_run", ""]]:
        fail("the trigger form holds %r, not deploy's declared keys and defaults" % got)
    shoot(cdp, os.path.join(shots, "trigger.png"))
    type_into(cdp, "#t-rows .prow:nth-child(1) .pval", "us")
    cdp.click("#t-go")
    run = cdp.wait("(m => m ? m[1] : null)(/^#run\\/(\\d+)$/.exec(location.hash))", "the parameterised run's page")
    r = wait_state(run, "succeeded")
    if r.get("params") != {"dry_run": "", "region": "us"}:
        fail("run %s's params in the database: %r" % (run, r.get("params")))
    cdp.wait("/^us\\n?$/.test(%s)" % text_of("#run-output"), "run %s's output 'us'" % run)
    # an undeclared key: the server's message at the rows, nothing written
    n = run_count("deploy")
    cdp.js("location.hash = '#trigger/deploy'")
    cdp.wait("document.querySelectorAll('#t-rows .prow').length === 2", "the trigger form again")
    cdp.click("#t-add")
    cdp.wait("document.querySelectorAll('#t-rows .prow').length === 3 && "
             "document.activeElement === document.querySelector('#t-rows .prow:nth-child(3) .pkey')",
             "a third row, its key focused")
    cdp.call("Input.insertText", text="regoin")
    type_into(cdp, "#t-rows .prow:nth-child(3) .pval", "x")
    key(cdp, "Enter", "Enter", 13)
    cdp.wait("/^job 'deploy' takes no parameter 'regoin'/.test(%s) && "
             "document.querySelector('#t-rows .prow:nth-child(3) .pkey').getAttribute('aria-invalid') === 'true'"
             % text_of("#err-params"), "the server's refusal at the parameter rows")
    shoot(cdp, os.path.join(shots, "trigger-error.png"))
    time.sleep(1)
    if run_count("deploy") != n or cdp.js("location.hash") != "#trigger/deploy":
        fail("a refused parameter made a run (%d before, %d after)" % (n, run_count("deploy")))
    return run


def cancel_runs(cdp, shots):
    """Cancel nap's running run from the runs view, held's waiting
    (scheduled) run from its page; both cancelled in the database and on
    the page; a Cancel pressed after the end shows the server's 409."""
    sel = 'tr[data-job="%s"] button[data-action="trigger"]'
    cdp.js("location.hash = '#jobs'")
    runs = []
    for job in ("nap", "held"):
        cdp.wait("!!document.querySelector(%s)" % json.dumps(sel % job), job + "'s trigger button")
        cdp.click(sel % job)
        msg = cdp.wait("(m => /^triggered %s: run \\d+$/.test(m) ? m : null)(%s)" % (job, text_of("#flash")),
                       job + "'s trigger")
        runs.append(msg.rsplit(" ", 1)[1])
    nap, held = runs
    wait_state(nap, "running")
    cdp.js("location.hash = '#runs'")
    row = 'tr[data-run="%s"]' % nap
    cdp.wait("!!document.querySelector(%s)" % json.dumps(row + ' td.st-running'), "nap's run %s running" % nap)
    cdp.click(row + ' button[data-action="cancel"]')
    cdp.wait("/^(cancel of run %s requested|cancelled run %s)/.test(%s)" % (nap, nap, text_of("#flash")),
             "the cancel's answer")
    wait_state(nap, "cancelled")
    cdp.wait("!!document.querySelector(%s) && !document.querySelector(%s)"
             % (json.dumps(row + ' td.st-cancelled'), json.dumps(row + ' button[data-action="cancel"]')),
             "run %s shown cancelled, without Cancel" % nap)
    shoot(cdp, os.path.join(shots, "runs-cancel.png"))
    # the waiting run, from its own page (the keyboard: focus, Enter)
    if run_row(held).get("state") != "scheduled":
        fail("held's run %s is not waiting: %r" % (held, run_row(held)))
    cdp.js("location.hash = '#run/%s'" % held)
    cdp.wait("!document.querySelector('#run-cancel').hidden", "Cancel on run %s's page" % held)
    cdp.js("document.querySelector('#run-cancel').focus()")
    key(cdp, "Enter", "Enter", 13)
    cdp.wait("%s === 'cancelled run %s'" % (text_of("#flash"), held), "the waiting run cancelled")
    wait_state(held, "cancelled")
    cdp.wait("document.querySelector('#run-cancel').hidden && "
             "!!document.querySelector(%s)" % json.dumps('#run-attempts tr[data-run="%s"] td.st-cancelled' % held),
             "run %s's page showing it cancelled" % held)
    # a page that had not yet heard of the end: the server's 409, said as it came
    cdp.js("document.querySelector('#run-cancel').hidden = false")
    cdp.click("#run-cancel")
    cdp.wait("/^cancel run %s: run %s already ended \\(cancelled\\)/.test(%s)" % (held, held, text_of("#flash")),
             "the 409 for an ended run")
    shoot(cdp, os.path.join(shots, "run-cancelled.png"))
    return nap, held


def failed_events(cdp, shots):
    """The failed deliveries: flop's event, failed after 5 attempts with
    the connection's error, linked to its run."""
    cdp.js("location.hash = '#events'")
    got = cdp.wait("(r => r && [...r.children].map(c => c.textContent))(document.querySelector('#events tbody tr'))",
                   "a failed delivery in the view")
    if got[1] != "flop" or got[5] != "failed" or got[6] != "5" or got[4] != "http://127.0.0.1:1/" or not got[7] or got[7] == "-":
        fail("the failed deliveries view shows %r" % got)
    rc, out = dbc("events", "--state", "failed", "--format", "json")
    ev = json.loads(out)[0] if rc == 0 and json.loads(out) else None
    if not ev or str(ev["run_id"]) != got[2] or ev["last_error"] != got[7]:
        fail("the view %r is not the database's event %r" % (got, ev))
    shoot(cdp, os.path.join(shots, "events.png"))
    cdp.click('#events tbody tr a[href="#run/%s"]' % got[2])
    cdp.wait("/^Run %s of flop/.test(%s)" % (got[2], text_of("#run-title")), "the event's run")


def actions(cdp, shots):
    """Trigger with parameters, Cancel, failed deliveries."""
    trigger_params(cdp, shots)
    cancel_runs(cdp, shots)
    failed_events(cdp, shots)


def narrow(cdp, hash_, ready, what, shot):
    cdp.js("location.hash = %s" % json.dumps(hash_))
    cdp.wait(ready, what)
    wide = cdp.js("document.documentElement.scrollWidth - window.innerWidth")
    if wide > 0:
        fail("%s is %d px wider than the window" % (what, wide))
    shoot(cdp, shot)


def crud(chromium, url, token, profile, shots):
    """Create, refuse, edit, trigger, pause and delete a job through the
    page, each step checked against the database; screenshots of each view
    into the directory shots."""
    proc, cdp = start(chromium, profile)
    try:
        cdp.call("Page.enable")
        cdp.call("Page.navigate", url=url)
        cdp.wait("document.readyState === 'complete' && !!document.querySelector('#token')", "the page")
        cdp.click("#token")
        cdp.call("Input.insertText", text=token)
        cdp.click("#auth button")
        cdp.wait("!!document.querySelector('tr[data-job=\"quiet\"]')", "the jobs")
        before = job_names()
        # an invalid cron: the live preview says why as it is typed, Save
        # shows the server's error at the field, and nothing is written
        cdp.click("#job-new")
        fill_form(cdp, "made", "cron", "61 * * * *", "echo made")
        cdp.wait("/61 is out of range/.test(%s)" % text_of("#err-spec"), "the preview's error at the cron field")
        cdp.click("#e-save")
        err = cdp.wait("(t => /^key 'cron': .*61 is out of range/.test(t) ? t : null)(%s)" % text_of("#err-spec"),
                       "the server's error at the cron field")
        if job_names() != before:
            fail("an invalid cron wrote a job: %r" % job_names())
        shoot(cdp, os.path.join(shots, "edit-error.png"))
        # corrected: the preview lists the next fires, Save creates the job
        type_into(cdp, "#e-spec", "0 */5 * * *")
        cdp.wait("document.querySelectorAll('#e-preview li').length === 5 && %s === ''" % text_of("#err-spec"),
                 "five next fires in the preview")
        shoot(cdp, os.path.join(shots, "edit.png"))
        cdp.click("#e-save")
        cdp.wait("location.hash === '#job/made'", "the new job's page")
        row = job_row("made")
        if not row or row.get("cron") != "0 */5 * * *" or row.get("command") != ["echo", "made"]:
            fail("the created job in the database: %r" % row)
        # a taken name: refused at the name field, the stored job untouched
        cdp.js("location.hash = '#edit'")
        fill_form(cdp, "quiet", "every", "1m", "echo overwritten")
        cdp.click("#e-save")
        cdp.wait("/already exists/.test(%s)" % text_of("#err-name"), "the server's error at the name field")
        q = job_row("quiet")
        if not q or q.get("command") != ["echo", "quiet"] or q.get("every") != "1h" or job_names() != sorted(before + ["made"]):
            fail("a duplicate name wrote: %r" % q)
        # edit with the keyboard: the new schedule, then Enter in the field
        cdp.js("location.hash = '#edit/made'")
        cdp.wait("document.querySelector('#e-spec').value === '0 */5 * * *'", "the form filled with made")
        type_into(cdp, "#e-spec", "0 */10 * * *")
        key(cdp, "Enter", "Enter", 13)
        cdp.wait("location.hash === '#job/made'", "the edited job's page")
        row = job_row("made")
        if not row or row.get("cron") != "0 */10 * * *" or row.get("command") != ["echo", "made"]:
            fail("the edited job in the database: %r" % row)
        shoot(cdp, os.path.join(shots, "job.png"))
        # trigger: the run is in the database and in made's strip
        cdp.js("location.hash = '#jobs'")
        sel = 'tr[data-job="made"] button[data-action="%s"]'
        cdp.wait("!!document.querySelector(%s)" % json.dumps(sel % "trigger"), "made's trigger button")
        cdp.click(sel % "trigger")
        msg = cdp.wait("(m => /^triggered made: run \\d+$/.test(m) ? m : null)(%s)" % text_of("#flash"),
                       "the trigger's answer")
        run = msg.rsplit(" ", 1)[1]
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            rc, out = dbc("runs", "--job", "made", "--format", "json", "--limit", "0")
            runs = json.loads(out) if rc == 0 else []
            runs = runs["runs"] if isinstance(runs, dict) else runs
            ended = [r for r in runs if str(r["id"]) == run and r["state"] == "succeeded"]
            if ended:
                break
            time.sleep(0.2)
        else:
            fail("run %s of made did not succeed in the database" % run)
        cdp.wait("!!document.querySelector('tr[data-job=\"made\"] td.strip a.st-succeeded[data-run=\"%s\"]')" % run,
                 "run %s as a succeeded cell of made's strip" % run)
        shoot(cdp, os.path.join(shots, "jobs.png"))
        # the cell leads to the run and its output
        cdp.click('tr[data-job="made"] td.strip a[data-run="%s"]' % run)
        cdp.wait("/^made\\n?$/.test(%s)" % text_of("#run-output"), "run %s's output" % run)
        shoot(cdp, os.path.join(shots, "run.png"))
        # the charts: the cluster's last hour, the run on this node's lane
        cdp.js("location.hash = '#charts'")
        cdp.wait("!!document.querySelector('#chart-nodes a[href=\"#run/%s\"]') && "
                 "document.querySelectorAll('#chart-runs rect').length > 0" % run, "the charts")
        shoot(cdp, os.path.join(shots, "charts.png"))
        # pause, then delete (asked twice)
        cdp.js("location.hash = '#jobs'")
        cdp.wait("!!document.querySelector(%s)" % json.dumps(sel % "pause"), "made's pause button")
        cdp.click(sel % "pause")
        cdp.wait("!!document.querySelector(%s)" % json.dumps(sel % "resume"), "made shown paused")
        row = job_row("made")
        if not row or row.get("paused") is not True:
            fail("made is not paused in the database: %r" % row)
        cdp.click(sel % "delete")
        cdp.wait("(b => b && b.textContent === 'Really delete?')(document.querySelector(%s))" % json.dumps(sel % "delete"),
                 "delete asking again")
        if job_row("made") is None:
            fail("one press of Delete deleted")
        cdp.click(sel % "delete")
        cdp.wait("!document.querySelector('tr[data-job=\"made\"]')", "made gone from the page")
        # the page's own answer too: a poll may show the row gone first, and
        # the delete's answer then leads to #jobs from wherever the page is
        cdp.wait("%s === 'deleted made'" % text_of("#flash"), "the delete's answer")
        if job_row("made") is not None or job_names() != before:
            fail("made is still in the database")
        executors(cdp, profile, shots)
        actions(cdp, shots)
        # a phone-sized window: nothing but the tables' own scrollers is
        # wider than the window, and the form stacks
        cdp.call("Emulation.setDeviceMetricsOverride", width=380, height=800, deviceScaleFactor=1, mobile=False)
        cdp.js("location.hash = '#edit'")
        cdp.wait("!document.querySelector('#view-edit').hidden", "the form, narrow")
        wide = cdp.js("document.documentElement.scrollWidth - window.innerWidth")
        if wide > 0:
            fail("the narrow form is %d px wider than the window" % wide)
        shoot(cdp, os.path.join(shots, "edit-narrow.png"))
        cdp.js("location.hash = '#jobs'")
        cdp.wait("!!document.querySelector('tr[data-job=\"quiet\"]')", "the jobs, narrow")
        wide = cdp.js("document.documentElement.scrollWidth - window.innerWidth")
        if wide > 0:
            fail("the narrow jobs view is %d px wider than the window" % wide)
        shoot(cdp, os.path.join(shots, "jobs-narrow.png"))
        narrow(cdp, "#trigger/deploy", "document.querySelectorAll('#t-rows .prow').length === 2",
               "the trigger form, narrow,", os.path.join(shots, "trigger-narrow.png"))
        narrow(cdp, "#events", "!!document.querySelector('#events tbody tr')",
               "the failed deliveries, narrow,", os.path.join(shots, "events-narrow.png"))
        cdp.js("location.hash = '#jobs'")
        cdp.wait("!!document.querySelector('tr[data-job=\"quiet\"]')", "the jobs again")
        cdp.call("Emulation.clearDeviceMetricsOverride")
        # the keyboard alone: Tab from the search field reaches its button,
        # then the New job link, which Enter follows
        cdp.js("document.querySelector('#j-q').focus()")
        for _ in range(2):
            key(cdp, "Tab", "Tab", 9)
        if cdp.js("document.activeElement.id") != "job-new":
            fail("Tab twice from the search field is at %r, not New job" % cdp.js("document.activeElement.id"))
        key(cdp, "Enter", "Enter", 13)
        cdp.wait("location.hash === '#edit'", "New job followed from the keyboard")
        cdp.js("location.hash = '#jobs'")
        # search by name
        type_into(cdp, "#j-q", "uie")
        key(cdp, "Enter", "Enter", 13)
        cdp.wait("(r => r.length === 1 && r[0].dataset.job === 'quiet')(document.querySelectorAll('#jobs tbody tr'))",
                 "the search for 'uie' showing quiet alone")
        print(run)
    finally:
        proc.kill()
        proc.wait()


def main():
    if sys.argv[1] == "--paging":
        return paging(*sys.argv[2:7])
    if sys.argv[1] == "--crud":
        return crud(*sys.argv[2:7])
    chromium, url, token, shot, profile = sys.argv[1:6]
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlparse(url))
    proc, cdp = start(chromium, profile)
    try:
        cdp.call("Network.enable")
        cdp.call("Page.enable")
        cdp.call("Page.navigate", url=url)
        cdp.wait("document.readyState === 'complete' && !!document.querySelector('#token')", "the page")
        # the token as a user gives it: typed into the form and submitted
        cdp.click("#token")
        cdp.call("Input.insertText", text=token)
        cdp.click("#auth button")
        cdp.wait("!!document.querySelector('tr[data-job=\"tick\"]') && "
                 "!!document.querySelector('tr[data-job=\"quiet\"]')", "the jobs tick and quiet")
        # the listing's words, zone and relative times (app_jobs_page)
        cells = "[...document.querySelectorAll('tr[data-job=\"%s\"] td')].map(c => c.textContent)"
        noon = cdp.wait("(c => c.length && c[2] === 'at 12:00:00, on day 1 of the month, in January'"
                        " && /^\\d{4}-01-01T12:00:00\\+01:00 in \\d+d$/.test(c[4]) ? c : null)(%s)"
                        % (cells % "noon"), "noon in words, at +01:00 and from now")
        tick = cdp.wait("(c => c.length && /^succeeded (\\d+[smh] ago|now)$/.test(c[5]) ? c : null)(%s)"
                        % (cells % "tick"), "tick's last run, succeeded, and when")
        if noon[7] != "echo noon" or tick[6] != "no":
            fail("command or paused column: %r %r" % (noon, tick))
        # between two fetches the relative text is said again each second,
        # against the database's clock (now_ms), not the browser's: with the
        # database an hour ahead, an instant 5.5 s after its now is "in 5s"
        rel = cdp.js("(() => { const e = document.querySelector('tr[data-job=\"noon\"] span.rel');"
                     " const was = e.dataset.at; skew += 3600000;"
                     " e.dataset.at = String(Date.now() + skew + 5500); tickRelative();"
                     " const t = e.textContent; skew -= 3600000; e.dataset.at = was; tickRelative();"
                     " return t; })()")
        if rel != "in 5s":
            fail("the relative next fire, 5.5 s ahead, reads %r" % rel)
        # the jobs view too, beside the screenshot of the runs view
        with open(re.sub(r"\.png$", "", shot) + "-jobs.png", "wb") as f:
            f.write(base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"]))
        cdp.js("location.hash = '#runs'")
        cdp.wait("[...document.querySelectorAll('#runs tbody tr')].some(r => r.children[1].textContent === 'tick')",
                 "runs of tick")
        cdp.js("location.hash = '#jobs'")
        cdp.wait("!!document.querySelector('tr[data-job=\"quiet\"] button[data-action=\"trigger\"]')",
                 "quiet's trigger button")
        cdp.click('tr[data-job="quiet"] button[data-action="trigger"]')
        msg = cdp.wait("(m => /^triggered quiet: run \\d+$/.test(m) ? m : null)"
                       "(document.querySelector('#flash').textContent)", "the trigger's answer")
        run = msg.rsplit(" ", 1)[1]
        cdp.js("location.hash = '#runs'")
        cdp.wait("!!document.querySelector('#runs tbody tr[data-run=\"%s\"]')" % run,
                 "run %s in the runs view" % run)
        # the run's own view: its attempt chain holds it, marked as this one
        cdp.js("location.hash = '#run/%s'" % run)
        cdp.wait("!!document.querySelector('#run-attempts tbody tr[data-run=\"%s\"][aria-current]')" % run,
                 "run %s in its own attempt chain" % run)
        cdp.js("location.hash = '#runs'")
        cdp.wait("!!document.querySelector('#runs tbody tr[data-run=\"%s\"]')" % run,
                 "run %s in the runs view again" % run)
        shot_png = base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"])
        with open(shot, "wb") as f:
            f.write(shot_png)
        # drain the events that came meanwhile, then check every request's origin
        cdp.js("1")
        foreign = sorted({e["params"]["request"]["url"] for e in cdp.events
                          if e.get("method") == "Network.requestWillBeSent"
                          and not e["params"]["request"]["url"].startswith(origin + "/")})
        if foreign:
            fail("the page asked other origins: %s" % foreign)
        print(run)
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
