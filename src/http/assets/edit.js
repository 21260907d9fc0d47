// The job form (#edit for a new job, #edit/NAME to change one): what it
// sends is a job definition to PUT /api/v1/jobs/NAME, so the server's
// checks are the one rule; its error is shown next to the field it names
// ("field" in the error).  A new job is sent with If-None-Match: * so a
// taken name is refused, never overwritten.  While a cron expression is
// typed, the next fires come from GET /api/v1/cron/next.
// Uses app.js's $, get, send, flash and views.
"use strict";
const SCHEDULE_KEYS = ["cron", "every", "after", "at"];
// what GET /jobs/NAME adds to a definition: not sent back
const LISTING_KEYS = ["id", "next_fire_at_ms", "next_fire", "last_runs", "schedule", "description",
  "next_fires", "next_fire_local", "unrunnable", "last_run", "strip", "set_aside", "needed_by"];
let editing = undefined;   // the job name the form holds (null: a new job)
let editBase = {};         // its stored definition, for the keys the form does not show

// The server's field -> the form's error slot.
function fieldSlot(field) {
  if (SCHEDULE_KEYS.includes(field)) return "#err-spec";
  const el = field && document.querySelector("#err-" + field);
  return el ? "#err-" + field : "#err-form";
}
function clearErrors() {
  for (const e of document.querySelectorAll("#edit-form .ferr")) e.textContent = "";
  for (const e of document.querySelectorAll("#edit-form [aria-invalid]")) e.removeAttribute("aria-invalid");
}
function showError(field, msg) {
  const slot = $(fieldSlot(field));
  slot.textContent = msg;
  const input = slot.parentElement && slot.parentElement.querySelector("input");
  if (input && slot.id !== "err-form") { input.setAttribute("aria-invalid", "true"); input.focus(); }
}
// "echo 'a b' c" -> ["echo", "a b", "c"]: single and double quotes, no expansion.
function words(text) {
  const out = []; let w = null, q = null;
  for (const ch of text) {
    if (q) { if (ch === q) q = null; else w += ch; continue; }
    if (ch === "'" || ch === '"') { q = ch; w = w || ""; continue; }
    if (/\s/.test(ch)) { if (w !== null) { out.push(w); w = null; } continue; }
    w = (w || "") + ch;
  }
  if (w !== null) out.push(w);
  return out;
}
function fillForm(def) {
  const kind = SCHEDULE_KEYS.find((k) => def[k] !== undefined) || "cron";
  $("#e-name").value = def.name || "";
  $("#e-name").readOnly = editing !== null;
  $("#e-kind").value = kind;
  $("#e-spec").value = def[kind] || "";
  $("#e-tz").value = def.tz || "";
  $("#e-command").value = def.command ? commandText(def) : "";
  $("#e-exec").value = def.http ? "http" : def.sql ? "sql" : "command";
  $("#e-http").value = def.http || "";
  $("#e-body").value = def.body || "";
  $("#e-sql").value = def.sql || "";
  $("#e-sql-db-file").value = def["sql-db-file"] || "";
  showExec();
  $("#e-timeout").value = def.timeout && def.timeout !== "0s" ? def.timeout : "";
  $("#e-retries").value = def.retries !== undefined ? String(def.retries) : "";
}
function formDefinition() {
  const d = Object.assign({}, editBase);
  for (const k of LISTING_KEYS.concat(SCHEDULE_KEYS)) delete d[k];
  d.name = $("#e-name").value.trim();
  d[$("#e-kind").value] = $("#e-spec").value.trim();
  const tz = $("#e-tz").value.trim(), to = $("#e-timeout").value.trim(), re = $("#e-retries").value.trim();
  if (tz) d.tz = tz; else delete d.tz;
  if (to) d.timeout = to; else delete d.timeout;
  // a number when it reads as one; else the text, for the server to refuse
  if (re) d.retries = /^\d+$/.test(re) ? Number(re) : re; else delete d.retries;
  const exec = $("#e-exec").value;
  if (exec === "http") return withOnly(d, HTTP_KEYS, { http: $("#e-http").value.trim(), body: $("#e-body").value });
  if (exec === "sql") return withOnly(d, SQL_KEYS, { sql: $("#e-sql").value.trim(), "sql-db-file": $("#e-sql-db-file").value.trim() });
  const cmd = words($("#e-command").value);
  // a command given replaces a handler, an HTTP call (and its keys) or a
  // statement; an empty one leaves a handler as it is
  if (cmd.length || !d.handler) return withOnly(d, [], { command: cmd });
  return d;
}
// The executors' own keys: a job runs one thing, so the others' go.
const HTTP_KEYS = ["http", "header", "body", "expect", "ca-file"], SQL_KEYS = ["sql", "sql-db-file"];
function withOnly(d, keep, given) {
  for (const k of ["command", "handler"].concat(HTTP_KEYS, SQL_KEYS))
    if (!keep.includes(k)) delete d[k];
  // an empty field drops its key; the server says what is missing
  for (const [k, v] of Object.entries(given)) { if (v === "" && k !== "command") delete d[k]; else d[k] = v; }
  return d;
}
function showExec() {
  const exec = $("#e-exec").value;
  for (const f of document.querySelectorAll("#edit-form [data-exec]")) f.hidden = f.dataset.exec !== exec;
}
async function save(e) {
  e.preventDefault();
  clearErrors();
  const d = formDefinition();
  if (!d.name) return showError("name", "a job needs a name");
  try {
    await send("PUT", "/jobs/" + encodeURIComponent(d.name), d,
      editing === null ? { "If-None-Match": "*" } : undefined);
    flash((editing === null ? "created " : "saved ") + d.name);
    location.hash = "#job/" + encodeURIComponent(d.name);
  } catch (err) { showError(err.field, err.message); }
}

// The live preview: the newest answer wins (an older one arriving late is dropped).
let previewSeq = 0, previewTimer = null;
async function preview() {
  const seq = ++previewSeq, ol = $("#e-preview");
  const expr = $("#e-spec").value.trim();
  $("#err-spec").textContent = "";
  $("#e-spec").removeAttribute("aria-invalid");
  if ($("#e-kind").value !== "cron" || !expr) { ol.replaceChildren(); return; }
  const q = new URLSearchParams({ expr, count: "5" });
  const tz = $("#e-tz").value.trim();
  if (tz) q.set("tz", tz);
  try {
    const r = await send("GET", "/cron/next?" + q);
    if (seq !== previewSeq) return;
    ol.replaceChildren(...r.fires.map((f) => {
      const li = document.createElement("li"); li.textContent = f.at; return li;
    }));
  } catch (err) {
    if (seq !== previewSeq) return;
    ol.replaceChildren();
    $(err.field === "tz" ? "#err-tz" : "#err-spec").textContent = err.message;
  }
}
function previewSoon() { clearTimeout(previewTimer); previewTimer = setTimeout(preview, 200); }

Object.assign(views, {
  // loads the job once per visit: the 2 s refresh must not undo typing
  async edit(name) {
    if (editing === name && editing !== undefined) return editing === null ? "new job" : "editing " + name;
    clearErrors();
    editing = name; editBase = {};
    $("#edit-title").textContent = name === null ? "New job" : "Edit " + name;
    if (name !== null) editBase = await get("/jobs/" + encodeURIComponent(name));
    fillForm(editBase);
    preview();
    return name === null ? "new job" : "editing " + name;
  },
});
window.addEventListener("hashchange", () => { if (!location.hash.startsWith("#edit")) editing = undefined; });
$("#edit-form").onsubmit = save;
$("#e-spec").oninput = previewSoon;
$("#e-tz").oninput = previewSoon;
$("#e-kind").onchange = previewSoon;
$("#e-exec").onchange = showExec;
