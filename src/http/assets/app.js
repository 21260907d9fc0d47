// The dashboard: plain DOM over /api/v1, no libraries, nothing from outside
// this server.  All text goes in through textContent, never as HTML.  The
// token lives in sessionStorage and is sent only as a Bearer header (no
// cookies), so another site cannot act with it.
"use strict";
const $ = (s) => document.querySelector(s);
const api = "/api/v1";
let token = sessionStorage.getItem("dbcron-token") || "";
let runCursors = [];      // cursors of the pages shown, for "Older"
let runNext = null;
let jobCursors = [];      // the same for the jobs pages (a cursor is a name)
let jobNext = null;
let current = "jobs";
let currentArg = null;

function headers() {
  return token ? { Authorization: "Bearer " + token } : {};
}
function say(msg) { $("#status").textContent = msg; }
// an action's outcome stays until the next action (the refresh does not clear it)
function flash(msg) { $("#flash").textContent = msg; }
// Polling with ETags: the last answer of each path and its validator; a
// 304 hands back the same object, so a view can tell nothing changed.
const etags = new Map();
async function get(path) {
  const h = headers(), was = etags.get(path);
  if (was) h["If-None-Match"] = was.etag;
  const r = await fetch(api + path, { headers: h });
  if (r.status === 304 && was) return was.json;
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
  const e = r.headers.get("ETag");
  if (e) etags.set(path, { etag: e, json: j }); else etags.delete(path);
  return j;
}
async function post(path) {
  const r = await fetch(api + path, { method: "POST", headers: headers() });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
  return j;
}
function td(text, cls) {
  const c = document.createElement("td");
  c.textContent = text === null || text === undefined ? "-" : String(text);
  if (cls) c.className = cls;
  return c;
}
function link(text, href) {
  const c = document.createElement("td");
  const a = document.createElement("a");
  a.href = href; a.textContent = text;
  c.appendChild(a);
  return c;
}
// A refresh must not replace a button between the press and the release of
// a click on it (the click would be lost): renders wait while a pointer is down.
let holding = false;
document.addEventListener("pointerdown", () => { holding = true; }, true);
for (const ev of ["pointerup", "pointercancel"])
  document.addEventListener(ev, () => setTimeout(() => { holding = false; }, 0), true);
function fill(sel, rows) {
  if (holding) return;
  const tb = $(sel + " tbody");
  tb.replaceChildren(...rows);
}
function schedule(j) {
  for (const k of ["cron", "every", "after", "at", "needs"]) if (j[k]) return k + " " + j[k];
  return "-";
}
// The database's clock minus this browser's, from the last jobs page's
// now_ms: "in 4m" is said against the clock the scheduler fires by.
let skew = 0;
let jobsShown = null, jobsSaid = "";   // the listing on screen (ETag polling)
// "in 4m", "3h ago", "now": the largest whole unit (minutes up to 2 h,
// hours up to 2 days), as `dbcron job list` says it.
function relative(ms) {
  const d = ms - (Date.now() + skew), a = Math.floor(Math.abs(d) / 1000);
  if (a === 0) return "now";
  const [per, unit] = a >= 172800 ? [86400, "d"] : a >= 7200 ? [3600, "h"] : a >= 60 ? [60, "m"] : [1, "s"];
  const t = Math.floor(a / per) + unit;
  return d > 0 ? "in " + t : t + " ago";
}
// A cell with an absolute time and its relative form, which ticks
// (tickRelative) between two fetches of the page.
function timeCell(ms, text, prefix) {
  const c = document.createElement("td");
  if (ms === null || ms === undefined) { c.textContent = prefix || "-"; return c; }
  const rel = document.createElement("span");
  rel.className = "rel"; rel.dataset.at = ms;
  rel.textContent = relative(ms);
  c.append((prefix ? prefix + " " : ""), rel);
  if (text) c.title = text;
  return c;
}
function tickRelative() {
  for (const e of document.querySelectorAll("span.rel[data-at]")) e.textContent = relative(Number(e.dataset.at));
}
function commandText(j) {
  if (j.handler !== undefined) return "handler " + j.handler;
  if (j.http !== undefined) return "http " + j.http;
  if (j.sql !== undefined) return "sql " + j.sql;
  return (j.command || []).map((w) => /^[A-Za-z0-9_./=:,+@%-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'").join(" ");
}
function took(r) {
  return r.started_ms !== null && r.finished_ms !== null ? (r.finished_ms - r.started_ms) + " ms" : "-";
}
function runRow(r, withJob) {
  const tr = document.createElement("tr");
  tr.dataset.run = r.id;
  tr.append(link(r.id, "#run/" + r.id));
  if (withJob) tr.append(link(r.job, "#job/" + encodeURIComponent(r.job)));
  // a backfill's run says so beside its instant (job backfill)
  tr.append(td(r.kind === "backfill" ? r.fire_at + " (backfill)" : r.fire_at), td(r.attempt),
    td(r.state, "st-" + r.state), td(r.node));
  if (withJob) tr.append(td(took(r)));
  tr.append(td(r.exit_code), td(r.error, "err"));
  // the runs view's Actions column: Cancel while the run can still be stopped
  if (withJob) tr.append(cancelCell(r));
  return tr;
}
async function act(name, verb) {
  try {
    const j = await post("/jobs/" + encodeURIComponent(name) + "/" + verb);
    flash(verb === "trigger" ? "triggered " + name + ": run " + j.run_id : verb + "d " + name);
    refresh();
  } catch (e) { flash(verb + " " + name + ": " + e.message); }
}
function button(text, fn) {
  const b = document.createElement("button");
  b.type = "button"; b.textContent = text; b.onclick = fn;
  return b;
}
// A job's last fires as a row of coloured cells, oldest first, each a link
// to its run (and its output).
const STRIP = 50;
function strip(runs) {
  const c = document.createElement("td");
  c.className = "strip";
  for (const r of runs || []) {
    const a = document.createElement("a");
    a.href = "#run/" + r.id; a.className = "cell st-" + r.state; a.dataset.run = r.id;
    a.title = r.state + " " + new Date(r.fire_at_ms).toISOString() + (r.attempt > 1 ? " try " + r.attempt : "");
    a.setAttribute("aria-label", "run " + r.id + " " + a.title);
    c.appendChild(a);
  }
  return c;
}
// Delete asks twice, on the page itself: the first press arms the button.
function deleteButton(name) {
  const b = button("Delete", async () => {
    if (b.dataset.armed !== "1") { b.dataset.armed = "1"; b.textContent = "Really delete?"; return; }
    try {
      await send("DELETE", "/jobs/" + encodeURIComponent(name));
      flash("deleted " + name);
      if (current !== "jobs") location.hash = "#jobs"; else refresh();
    } catch (e) { flash("delete " + name + ": " + e.message); }
  });
  b.dataset.action = "delete";
  return b;
}
// A write; the error (with its "field") is thrown as it came.
async function send(method, path, body, extra) {
  const h = Object.assign(headers(), extra || {});
  if (body !== undefined) h["Content-Type"] = "application/json";
  const r = await fetch(api + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) {
    const e = new Error(j.error ? j.error.message : r.statusText);
    e.field = j.error && j.error.field;
    throw e;
  }
  return j;
}

const views = {
  async jobs() {
    // one page from the server at a time, so 10,000 jobs cost what 100 do
    const q = new URLSearchParams({ limit: "100", strip: String(STRIP) });
    const c = jobCursors[jobCursors.length - 1];
    if (c) q.set("cursor", c);
    const search = $("#j-q").value.trim();
    if (search) q.set("q", search);
    const j = await get("/jobs?" + q);
    // a 304 hands back the same object: its now_ms is as old as its first fetch
    if (j === jobsShown) return jobsSaid;
    jobsShown = holding ? null : j;   // a render fill() skipped is done again
    if (typeof j.now_ms === "number") skew = j.now_ms - Date.now();
    jobNext = j.next_cursor;
    $("#jobs-next").disabled = !jobNext;
    $("#jobs-first").disabled = jobCursors.length === 0;
    fill("#jobs", j.jobs.map((job) => {
      const tr = document.createElement("tr");
      tr.dataset.job = job.name;
      const acts = document.createElement("td");
      const t = button("Trigger", () => act(job.name, "trigger"));
      t.dataset.action = "trigger";
      const p = job.paused ? button("Resume", () => act(job.name, "resume"))
                           : button("Pause", () => act(job.name, "pause"));
      p.dataset.action = job.paused ? "resume" : "pause";
      const ed = document.createElement("a");
      ed.href = "#edit/" + encodeURIComponent(job.name); ed.textContent = "Edit"; ed.dataset.action = "edit";
      const tp = document.createElement("a");
      tp.href = "#trigger/" + encodeURIComponent(job.name); tp.textContent = "Trigger\u2026";
      tp.title = "trigger with parameters"; tp.dataset.action = "trigger-params";
      acts.append(t, " ", tp, " ", p, ed, " ", deleteButton(job.name));
      const words = td(job.description || schedule(job), "words");
      words.title = job.schedule || schedule(job);
      let next;
      if (job.set_aside) next = td("set aside: " + job.set_aside, "err");
      else if (job.paused) next = td("paused", "mute");
      else next = timeCell(job.next_fire_at_ms, job.next_fire_local);
      if (!job.set_aside && job.next_fire_local) {
        const local = document.createElement("span");
        local.className = "local"; local.textContent = job.next_fire_local + " ";
        next.prepend(local);
      }
      const lr = job.last_run;
      const last = !lr ? td("-") : timeCell(lr.finished_at_ms, lr.finished_at, lr.state);
      if (lr) { last.className = "st-" + lr.state; last.dataset.state = lr.state; }
      const cmd = td(commandText(job) + (job.unrunnable ? " (" + job.unrunnable + ")" : ""), "cmd");
      tr.append(link(job.name, "#job/" + encodeURIComponent(job.name)), strip(job.strip), words,
                td(job.tz), next, last, td(job.paused ? "yes" : "no"), cmd, acts);
      return tr;
    }));
    jobsSaid = j.jobs.length + " jobs" + (jobCursors.length || jobNext ? " (page " + (jobCursors.length + 1) + ")" : "");
    return jobsSaid;
  },
  async job(name) {
    const j = await get("/jobs/" + encodeURIComponent(name));
    $("#job-title").textContent = "Job " + j.name;
    $("#job-edit").href = "#edit/" + encodeURIComponent(j.name);
    $("#job-charts").href = "#charts/" + encodeURIComponent(j.name);
    $("#job-trigger").href = "#trigger/" + encodeURIComponent(j.name);
    const def = Object.assign({}, j); delete def.last_runs;
    $("#job-def").textContent = JSON.stringify(def, null, 2);
    fill("#job-runs", j.last_runs.slice().reverse().map((r) => runRow(r, false)));
    return "job " + name;
  },
  async runs() {
    const q = new URLSearchParams({ limit: "50" });
    const job = $("#f-job").value.trim(), state = $("#f-state").value;
    if (job) q.set("job", job);
    if (state) q.set("state", state);
    const c = runCursors[runCursors.length - 1];
    if (c) q.set("cursor", c);
    const j = await get("/runs?" + q);
    runNext = j.next_cursor;
    $("#runs-older").disabled = !runNext;
    $("#runs-newest").disabled = runCursors.length === 0;
    fill("#runs", j.runs.map((r) => runRow(r, true)));
    return j.runs.length + " runs" + (runCursors.length ? " (older page " + (runCursors.length + 1) + ")" : "");
  },
  async run(id) {
    const r = await get("/runs/" + encodeURIComponent(id));
    $("#run-title").textContent = "Run " + r.id + " of " + r.job + " (attempt " + r.attempt +
      (r.kind === "backfill" ? ", backfill" : "") + ")";
    const def = Object.assign({}, r); delete def.output; delete def.attempts;
    $("#run-def").textContent = JSON.stringify(def, null, 2);
    // the fire's attempt chain, each a link to its own run; this one marked
    fill("#run-attempts", (r.attempts || []).map((a) => {
      const tr = runRow(a, false);
      if (a.id === r.id) { tr.setAttribute("aria-current", "true"); tr.className = "current"; }
      return tr;
    }));
    $("#run-output").textContent = r.output || "(no output captured)";
    $("#run-cancel").hidden = !cancellable(r);
    return "run " + id;
  },
  async nodes() {
    const j = await get("/nodes");
    fill("#nodes", j.nodes.map((n) => {
      const tr = document.createElement("tr");
      tr.append(td(n.node), td(n.host), td(n.state), td(n.workers), td(n.running),
                td(n.heartbeat_age_ms === null ? "never" : Math.round(n.heartbeat_age_ms / 1000) + "s ago"));
      return tr;
    }));
    return j.nodes.length + " nodes";
  },
  async audit() {
    const q = new URLSearchParams({ limit: "100" });
    const job = $("#a-job").value.trim(), since = $("#a-since").value.trim();
    if (job) q.set("job", job);
    if (since) q.set("since", since);
    const j = await get("/audit?" + q);
    // newest first on a page: the last change is what one looks for
    fill("#audit", j.audit.slice().reverse().map((a) => {
      const tr = document.createElement("tr");
      const ch = Object.entries((a.detail && a.detail.changes) || {})
        .map(([k, v]) => k + ": " + JSON.stringify(v.before) + " \u2192 " + JSON.stringify(v.after));
      for (const [k, v] of Object.entries(a.detail || {})) if (k !== "changes") ch.push(k + "=" + JSON.stringify(v));
      tr.append(td(a.at), td(a.actor), td(a.action),
                a.job ? link(a.job, "#job/" + encodeURIComponent(a.job)) : td(null), td(ch.join("; "), "cmd"));
      return tr;
    }));
    return j.audit.length + " audit rows";
  },
  async locks() {
    const j = await get("/locks");
    fill("#locks", j.locks.map((l) => {
      const tr = document.createElement("tr");
      tr.append(td(l.name), td(l.owner), td(new Date(l.until_ms).toISOString()), td(l.fence), td(l.state));
      return tr;
    }));
    return j.locks.length + " locks";
  },
};

async function refresh() {
  try {
    const msg = await views[current](currentArg);
    say(msg + " - updated " + new Date().toLocaleTimeString());
  } catch (e) { say(e.message); }
}
function route() {
  const h = location.hash.slice(1) || "jobs";
  const i = h.indexOf("/");
  current = i < 0 ? h : h.slice(0, i);
  currentArg = i < 0 ? null : decodeURIComponent(h.slice(i + 1));
  if (!views[current]) current = "jobs";
  for (const s of document.querySelectorAll("main section")) s.hidden = s.id !== "view-" + current;
  for (const a of document.querySelectorAll("nav a"))
    if (a.id === "nav-" + current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  refresh();
}
$("#auth").onsubmit = (e) => {
  e.preventDefault();
  token = $("#token").value.trim();
  sessionStorage.setItem("dbcron-token", token);
  refresh();
};
$("#run-filter").onsubmit = (e) => { e.preventDefault(); runCursors = []; refresh(); };
$("#audit-filter").onsubmit = (e) => { e.preventDefault(); refresh(); };
$("#runs-older").onclick = () => { if (runNext) { runCursors.push(runNext); refresh(); } };
$("#runs-newest").onclick = () => { runCursors = []; refresh(); };
$("#jobs-next").onclick = () => { if (jobNext) { jobCursors.push(jobNext); refresh(); } };
$("#jobs-first").onclick = () => { jobCursors = []; refresh(); };
$("#job-search").onsubmit = (e) => { e.preventDefault(); jobCursors = []; refresh(); };
window.onhashchange = route;
// after every script of the page has added its views (edit.js, charts.js)
document.addEventListener("DOMContentLoaded", route);
// live: poll every 2 s while the page is visible (only the newest runs page)
setInterval(() => { if (!document.hidden && !(current === "runs" && runCursors.length)) refresh(); }, 2000);
setInterval(() => { if (!document.hidden) tickRelative(); }, 1000);
