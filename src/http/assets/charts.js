// The charts (#charts for the cluster, #charts/NAME for one job), from
// GET /api/v1/stats: runs per minute by outcome (stacked bars), start
// lateness p50/p99 per minute (two lines), and the node timeline (a lane
// per node, a bar per run from its start to its end).  Plain SVG built
// with the DOM; colours come from app.css classes (the CSP allows no
// inline style).  Uses app.js's $, get and views.
"use strict";
const SVG = "http://www.w3.org/2000/svg";
const OUTCOMES = ["succeeded", "failed", "timed_out", "skipped", "misfired", "abandoned", "running", "scheduled"];
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) { const t = document.createElementNS(SVG, "title"); t.textContent = text; e.appendChild(t); }
  return e;
}
function chart(w, h, label) {
  return svg("svg", { viewBox: "0 0 " + w + " " + h, role: "img", "aria-label": label, preserveAspectRatio: "none" });
}
function hhmm(ms) { return new Date(ms).toISOString().slice(11, 16); }
function axis(s, W, H, from, minutes) {
  for (let m = 0; m <= minutes; m += 15) {
    const x = (m / minutes) * W;
    s.appendChild(svg("line", { x1: x, x2: x, y1: 0, y2: H, class: "grid" }));
    const t = svg("text", { x: Math.min(x + 2, W - 30), y: H - 2, class: "tick" });
    t.textContent = hhmm(from + m * 60000);
    s.appendChild(t);
  }
}
function runsChart(st) {
  const W = 600, H = 160, n = st.per_minute.length, bw = W / n;
  const max = Math.max(1, ...st.per_minute.map((p) => OUTCOMES.reduce((a, k) => a + (p[k] || 0), 0)));
  const s = chart(W, H, "runs per minute by outcome, at most " + max);
  axis(s, W, H, st.from_ms, st.minutes);
  st.per_minute.forEach((p, i) => {
    let y = H - 12;
    for (const k of OUTCOMES) {
      if (!p[k]) continue;
      const h = (p[k] / max) * (H - 24);
      y -= h;
      s.appendChild(svg("rect", { x: i * bw + 0.5, y, width: Math.max(bw - 1, 1), height: h, class: "st-" + k },
        hhmm(p.at_ms) + ": " + p[k] + " " + k));
    }
  });
  const t = svg("text", { x: 2, y: 10, class: "tick" }); t.textContent = "max " + max + "/min"; s.appendChild(t);
  return s;
}
function lateChart(st) {
  const W = 600, H = 160, n = st.per_minute.length, bw = W / n;
  const vals = st.per_minute.flatMap((p) => [p.lateness_p50_ms, p.lateness_p99_ms]).filter((v) => v !== undefined);
  const max = Math.max(1, ...vals);
  const s = chart(W, H, "start lateness p50 and p99 per minute, at most " + max + " ms");
  axis(s, W, H, st.from_ms, st.minutes);
  for (const [key, cls] of [["lateness_p99_ms", "p99"], ["lateness_p50_ms", "p50"]]) {
    const pts = [];
    st.per_minute.forEach((p, i) => {
      if (p[key] === undefined) return;
      const x = i * bw + bw / 2, y = H - 12 - (Math.max(p[key], 0) / max) * (H - 24);
      pts.push(x + "," + y);
      s.appendChild(svg("circle", { cx: x, cy: y, r: 2, class: cls }, hhmm(p.at_ms) + " " + cls + ": " + p[key] + " ms"));
    });
    if (pts.length) s.appendChild(svg("polyline", { points: pts.join(" "), class: "line " + cls }));
  }
  const t = svg("text", { x: 2, y: 10, class: "tick" }); t.textContent = "max " + max + " ms (p50 solid, p99 dashed)"; s.appendChild(t);
  return s;
}
function nodesChart(st) {
  const nodes = [...new Set(st.timeline.map((r) => r.node || "?"))].sort();
  const W = 600, lane = 18, H = Math.max(1, nodes.length) * lane + 14, L = 90, span = st.minutes * 60000;
  const s = chart(W, H, "node timeline: " + nodes.length + " nodes, " + st.timeline.length + " runs");
  axis(s, W, H, st.from_ms, st.minutes);
  nodes.forEach((n, i) => {
    const t = svg("text", { x: 2, y: i * lane + 12, class: "tick" }); t.textContent = n; s.appendChild(t);
  });
  for (const r of st.timeline) {
    const i = nodes.indexOf(r.node || "?");
    const x0 = ((r.started_ms - st.from_ms) / span) * (W - L) + L;
    const x1 = (((r.finished_ms || st.now_ms) - st.from_ms) / span) * (W - L) + L;
    const a = svg("a", { href: "#run/" + r.run_id });
    a.appendChild(svg("rect", { x: x0, y: i * lane + 3, width: Math.max(x1 - x0, 1.5), height: lane - 6, class: "st-" + r.state },
      r.job + " run " + r.run_id + " on " + r.node + ": " + r.state));
    s.appendChild(a);
  }
  return s;
}

Object.assign(views, {
  async charts(job) {
    // #charts/NAME fills the field once; what is typed then wins
    if (job !== chartsArg) { chartsArg = job; $("#c-job").value = job || ""; }
    const name = $("#c-job").value.trim();
    const q = new URLSearchParams({ minutes: "60" });
    if (name) q.set("job", name);
    const st = await get("/stats?" + q);
    if (st === chartsShown) return chartsSaid; // 304: nothing changed
    chartsShown = st;
    $("#charts-title").textContent = "Charts: " + (name || "all jobs");
    $("#chart-runs").replaceChildren(runsChart(st));
    $("#chart-late").replaceChildren(lateChart(st));
    $("#chart-nodes").replaceChildren(nodesChart(st));
    $("#chart-legend").replaceChildren(...OUTCOMES.map((k) => {
      const sp = document.createElement("span"); sp.className = "key st-" + k; sp.textContent = k; return sp;
    }));
    chartsSaid = "charts of " + (name || "all jobs") + ", " + st.timeline.length + " runs started in the last hour";
    return chartsSaid;
  },
});
let chartsArg, chartsShown = null, chartsSaid = "";
$("#charts-filter").onsubmit = (e) => { e.preventDefault(); refresh(); };
