// Three actions the API already has: a trigger with parameters
// (#trigger/NAME, POST /api/v1/jobs/NAME/trigger with {"params": {...}}),
// Cancel on a run that can still be stopped (POST /api/v1/runs/ID/cancel),
// and the reaction events whose delivery failed (#events, GET
// /api/v1/events?state=failed).  The server's checks are the one rule: its
// message is shown as it came, and a refused trigger writes nothing.
// Uses app.js's $, get, send, td, link, fill, flash, refresh and views.
"use strict";

// ---- Cancel ----
// scheduled (not claimed yet: ended at once) or running (its node stops it)
function cancellable(r) { return r.state === "running" || r.state === "scheduled"; }
async function cancelRun(id) {
  try {
    const r = await send("POST", "/runs/" + encodeURIComponent(id) + "/cancel");
    flash(r.cancel === "done" ? "cancelled run " + id
                              : "cancel of run " + id + " requested: its node stops it");
    refresh();
  } catch (e) { flash("cancel run " + id + ": " + e.message); }
}
function cancelCell(r) {
  const c = document.createElement("td");
  if (!cancellable(r)) return c;
  const b = button("Cancel", () => cancelRun(r.id));
  b.dataset.action = "cancel";
  b.setAttribute("aria-label", "cancel run " + r.id);
  c.appendChild(b);
  return c;
}
$("#run-cancel").onclick = () => { if (current === "run") cancelRun(currentArg); };

// ---- Trigger with parameters ----
let triggering;   // the job the form holds (undefined: none loaded)
let loadingTrigger; // the job whose form is being fetched

// "region=eu,dry_run" -> [["region", "eu"], ["dry_run", ""]] (the server's
// split: items at ',', the key up to the first '=')
function declared(decl) {
  if (typeof decl !== "string" || !decl) return [];
  return decl.split(",").map((it) => {
    const i = it.indexOf("=");
    return i < 0 ? [it, ""] : [it.slice(0, i), it.slice(i + 1)];
  });
}
let paramSeq = 0;
function paramRow(k, v) {
  const row = document.createElement("div"), n = ++paramSeq;
  row.className = "prow";
  const key = document.createElement("input"), val = document.createElement("input");
  key.className = "pkey"; key.value = k; key.autocomplete = "off"; key.id = "t-key-" + n;
  val.className = "pval"; val.value = v; val.autocomplete = "off"; val.id = "t-val-" + n;
  key.setAttribute("aria-label", "parameter key");
  val.setAttribute("aria-label", "value of " + (k || "the parameter"));
  key.setAttribute("aria-describedby", "err-params");
  const rm = button("Remove", () => { row.remove(); $("#t-add").focus(); });
  rm.setAttribute("aria-label", "remove parameter " + (k || n));
  row.append(key, " = ", val, " ", rm);
  return row;
}
function clearParamErrors() {
  $("#err-params").textContent = "";
  for (const e of document.querySelectorAll("#t-rows [aria-invalid]")) e.removeAttribute("aria-invalid");
}
// the server's message at the rows; the key it names marked and focused
function showParamError(msg) {
  $("#err-params").textContent = msg;
  const m = /parameter '([^']*)'|params\.([A-Za-z0-9_]*)/.exec(msg);
  const name = m ? (m[1] !== undefined ? m[1] : m[2]) : null;
  const keys = [...document.querySelectorAll("#t-rows .pkey")];
  const bad = keys.find((k) => k.value.trim() === name) || keys[0];
  if (bad) { bad.setAttribute("aria-invalid", "true"); bad.focus(); }
}
// the rows as {"KEY": "VALUE"}; a row left empty is no parameter
function formParams() {
  const out = {};
  for (const row of document.querySelectorAll("#t-rows .prow")) {
    const k = row.querySelector(".pkey").value.trim(), v = row.querySelector(".pval").value;
    if (k || v) out[k] = v;
  }
  return out;
}
async function submitTrigger(e) {
  e.preventDefault();
  clearParamErrors();
  const name = triggering, params = formParams();
  if (typeof name !== "string") return;
  try {
    const j = await send("POST", "/jobs/" + encodeURIComponent(name) + "/trigger",
                         Object.keys(params).length ? { params } : undefined);
    flash("triggered " + name + ": run " + j.run_id + (j.warning ? " (" + j.warning + ")" : ""));
    location.hash = "#run/" + j.run_id;
  } catch (err) { showParamError(err.message); }
}

// ---- Failed deliveries ----
function eventRow(ev) {
  const tr = document.createElement("tr");
  tr.dataset.event = ev.id;
  tr.append(td(ev.id), ev.job ? link(ev.job, "#job/" + encodeURIComponent(ev.job)) : td(null),
            ev.run_id ? link(ev.run_id, "#run/" + ev.run_id) : td(null), td(ev.kind),
            td(ev.target, "cmd"), td(ev.state, "st-" + ev.state), td(ev.attempts),
            td(ev.last_error, "err"), td(ev.finished_at || ev.created_at));
  return tr;
}

Object.assign(views, {
  // loads the job once per visit: the 2 s refresh must not undo typing.
  // Nor may a refresh that came while the fetch was in flight: it loaded
  // the form a second time, over a row the user had added meanwhile (a
  // slow server; it_http_dashboard saw the row vanish under load).
  async trigger(name) {
    if (triggering === name || loadingTrigger === name) return "trigger " + name;
    loadingTrigger = name;
    clearParamErrors();
    // not the last visit's rows meanwhile: the load would replace them,
    // and a row added to them with it (it_http_dashboard under load)
    $("#t-rows").replaceChildren();
    $("#t-add").disabled = $("#t-go").disabled = true;
    $("#trigger-title").textContent = "Trigger " + name;
    $("#t-back").href = "#job/" + encodeURIComponent(name);
    let j;
    try {
      j = await get("/jobs/" + encodeURIComponent(name));
    } catch (e) {
      if (loadingTrigger === name) loadingTrigger = undefined; // the next refresh tries again
      throw e;
    }
    if (loadingTrigger !== name) return "trigger " + name; // left or replaced meanwhile
    loadingTrigger = undefined;
    const decl = declared(j.params);
    $("#trigger-note").textContent = decl.length
      ? "It takes only: " + decl.map((d) => d[0]).join(", ") + " (a key left out takes its default)."
      : "It declares no parameters: any KEY ([A-Za-z_][A-Za-z0-9_]*) is taken.";
    $("#t-rows").replaceChildren(...(decl.length ? decl : [["", ""]]).map((d) => paramRow(d[0], d[1])));
    $("#t-add").disabled = $("#t-go").disabled = false;
    triggering = name;
    return "trigger " + name;
  },
  async events() {
    const q = new URLSearchParams({ limit: "100" });
    const state = $("#ev-state").value, job = $("#ev-job").value.trim();
    if (state) q.set("state", state);
    if (job) q.set("job", job);
    const j = await get("/events?" + q);
    fill("#events", j.events.map(eventRow));
    return j.events.length + (state ? " " + state : "") + " events";
  },
});
window.addEventListener("hashchange", () => {
  if (!location.hash.startsWith("#trigger")) triggering = loadingTrigger = undefined;
});
$("#trigger-form").onsubmit = submitTrigger;
$("#t-add").onclick = () => {
  const row = paramRow("", "");
  $("#t-rows").appendChild(row);
  row.querySelector(".pkey").focus();
};
$("#events-filter").onsubmit = (e) => { e.preventDefault(); refresh(); };
