// The tailcut dashboard (docs/DASHBOARD.md): polls the scheduler's JSON API
// every second and redraws. Plain DOM and hand-drawn SVG, no libraries.
// Every value from the API goes in through textContent or an SVG
// attribute, never innerHTML: job and executor names come from clients.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const REFRESH_MS = 1000;
const RING = 2000;  // attempts kept here, as on the scheduler

// Ended attempts by seq (the API sends those after ?since=), live ones afresh.
const ended = new Map();
let lastSeq = 0;
let jobNames = new Map();
let execNames = new Map();

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function secs(v) {
  if (v === null || v === undefined) return "–";
  if (v < 1) return (v * 1000).toFixed(v < 0.01 ? 1 : 0) + " ms";
  if (v < 120) return v.toFixed(v < 10 ? 2 : 1) + " s";
  return (v / 60).toFixed(1) + " min";
}
function td(text, cls) { return el("td", cls ? { class: cls } : {}, text); }
function barCell(frac, cls, label) {
  const cell = el("td");
  const bar = el("span", { class: "bar" + (cls ? " " + cls : "") });
  const fill = el("div");
  fill.style.width = (Math.max(0, Math.min(1, frac)) * 100).toFixed(1) + "%";
  bar.appendChild(fill);
  cell.appendChild(bar);
  cell.appendChild(document.createTextNode(label));
  return cell;
}
function emptyRow(body, cols, text) {
  const tr = el("tr");
  tr.appendChild(el("td", { colspan: cols, class: "note" }, text));
  body.appendChild(tr);
}
async function get(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function renderJobs(data) {
  const body = document.querySelector("#jobs tbody");
  clear(body);
  jobNames = new Map();
  for (const j of data.jobs) {
    jobNames.set(j.id, j.name);
    const tr = el("tr", { "data-job": j.id });
    tr.appendChild(td(j.id, "num"));
    tr.appendChild(td(j.name || "(unnamed)"));
    const st = el("td");
    st.appendChild(el("span", { class: "state " + j.state }, j.state));
    if (j.reason) st.title = j.reason;
    tr.appendChild(st);
    tr.appendChild(barCell(j.tasks ? j.committed / j.tasks : 0, "", j.committed + "/" + j.tasks));
    for (const k of ["running", "attempts", "copies", "copies_won", "restarts"]) tr.appendChild(td(j[k], "num"));
    tr.appendChild(td(secs(j.run_p50_s), "num"));
    tr.appendChild(td(secs(j.run_p99_s), "num"));
    tr.appendChild(td(j.state === "running" ? "running" : secs(j.latency_s), "num"));
    body.appendChild(tr);
  }
  if (!data.jobs.length) emptyRow(body, 12, "no jobs yet");
  return data.jobs;
}

function renderExecutors(data) {
  const body = document.querySelector("#executors tbody");
  clear(body);
  execNames = new Map();
  for (const e of data.executors) {
    execNames.set(e.id, e.name);
    const tr = el("tr", { "data-executor": e.id });
    tr.appendChild(td(e.name));
    tr.appendChild(td(e.host));
    const h = el("td");
    h.appendChild(el("span", { class: "health " + e.health }, e.health.replace("_", "-")));
    tr.appendChild(h);
    tr.appendChild(td("×" + e.speed_factor.toFixed(2), "num"));
    tr.appendChild(barCell(e.load, "load", e.running + "/" + e.slots));
    tr.appendChild(td(e.finished, "num"));
    tr.appendChild(td(e.quarantined ? "quarantined" : "–", e.quarantined ? "quarantined" : ""));
    body.appendChild(tr);
  }
  if (!data.executors.length) emptyRow(body, 7, "no executors registered");
  // The scheduler sends a bounded view of a large fleet (unhealthy first).
  if (data.total > data.executors.length)
    emptyRow(body, 7, 'showing ' + data.executors.length + ' of ' + data.total + ' executors (the unhealthy first)');
  return data.executors;
}

// Owners' shares: slots held against the weight's fair share.
function renderOwners(data) {
  const body = document.querySelector("#owners tbody");
  clear(body);
  for (const o of data.owners) {
    const tr = el("tr");
    tr.appendChild(td(o.owner || "(none)"));
    tr.appendChild(td(o.weight.toFixed(2), "num"));
    tr.appendChild(barCell(o.share, "load", o.slots + "/" + data.total_slots));
    tr.appendChild(td((100 * o.fair_share).toFixed(1) + "%", "num"));
    tr.appendChild(td(o.max_slots ? o.max_slots : "–", "num"));
    tr.appendChild(td(o.jobs, "num"));
    tr.appendChild(td(o.waiting ? "yes" : "–"));
    body.appendChild(tr);
  }
  if (!data.owners.length) emptyRow(body, 7, "no running jobs");
}

// Empirical CDF of recent finished jobs' latency; log-x when it spans
// more than a decade, with p50 and p99 marked.
function renderCdf(data) {
  const g = document.getElementById("cdf");
  clear(g);
  const v = data.latencies_s.filter((x) => x !== null);
  document.getElementById("cdf-note").textContent =
    v.length ? `last ${v.length} of ${data.jobs_finished} finished jobs` : "";
  const W = 480, H = 220, L = 44, R = 12, T = 10, B = 34;
  g.appendChild(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  g.appendChild(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  if (!v.length) {
    g.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no finished jobs yet"));
    return;
  }
  const lo = Math.max(v[0], 1e-4), hi = Math.max(v[v.length - 1], lo * 1.01);
  const log = hi / lo > 10;
  const fx = log ? (x) => Math.log10(Math.max(x, lo)) : (x) => x;
  const x0 = log ? fx(lo) : 0, x1 = fx(hi);
  const px = (x) => L + ((fx(x) - x0) / (x1 - x0 || 1)) * (W - L - R);
  const py = (p) => H - B - p * (H - B - T);
  let d = `M${px(v[0]).toFixed(1)},${py(0).toFixed(1)}`;
  v.forEach((x, i) => {
    d += `H${px(x).toFixed(1)}V${py((i + 1) / v.length).toFixed(1)}`;
  });
  g.appendChild(svg("path", { class: "cdf", d }));
  for (const p of [0, 0.5, 0.9, 1]) {
    g.appendChild(svg("text", { x: L - 4, y: py(p) + 4, "text-anchor": "end" }, p.toFixed(1)));
  }
  const ticks = log ? [] : [0, 0.25, 0.5, 0.75, 1].map((f) => x0 + f * (x1 - x0));
  if (log) for (let e = Math.ceil(x0); e <= Math.floor(x1); e++) ticks.push(Math.pow(10, e));
  ticks.forEach((t, i) => {
    const anchor = i === ticks.length - 1 && px(t) > W - R - 20 ? "end" : "middle";  // keep the last one inside
    g.appendChild(svg("text", { x: px(t), y: H - B + 14, "text-anchor": anchor }, secs(t)));
  });
  for (const [q, name] of [[0.5, "p50"], [0.99, "p99"]]) {
    const x = v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
    g.appendChild(svg("line", { class: "mark", x1: px(x), y1: T, x2: px(x), y2: H - B }));
    const right = px(x) > (W + L) / 2;  // label on the side with room
    g.appendChild(svg("text", { x: px(x) + (right ? -3 : 3), y: T + (q === 0.5 ? 10 : 22),
                                "text-anchor": right ? "end" : "start" }, `${name} ${secs(x)}`));
  }
  g.appendChild(svg("text", { x: (W + L) / 2, y: H - 4, "text-anchor": "middle" },
                    "job latency, submit to final state" + (log ? " (log)" : "")));
}

// One row per executor, one bar per attempt from its start (or launch) to
// its end (or now). Colour: kind (first, copy, restart) or failure; faded:
// superseded or cancelled; outlined: the winner (committed); striped: live.
function renderTimeline(data, executors) {
  if (data.last_seq < lastSeq) ended.clear();  // the scheduler restarted: its numbering did too
  lastSeq = data.last_seq;
  const live = [];
  for (const a of data.attempts) {
    if (a.outcome === "running") live.push(a);
    else ended.set(a.seq, a);
  }
  while (ended.size > RING) ended.delete(ended.keys().next().value);
  const all = [...ended.values(), ...live];
  const g = document.getElementById("timeline");
  clear(g);
  const rows = executors.map((e) => e.id);
  for (const a of all) if (!rows.includes(a.executor)) rows.push(a.executor);
  const rowH = 22, L = 120, R = 10, T = 4, B = 20, W = 1200;
  const H = T + B + Math.max(1, rows.length) * rowH;
  g.setAttribute("viewBox", `0 0 ${W} ${H}`);
  g.style.height = H + "px";
  const now = data.now;
  const begin = (a) => (a.started !== null ? a.started : a.queued);
  let t0 = now - 5;
  for (const a of all) t0 = Math.min(t0, begin(a));
  t0 = Math.max(t0, now - 120);  // at most the last two minutes
  const px = (t) => L + ((Math.max(t, t0) - t0) / (now - t0 || 1)) * (W - L - R);
  rows.forEach((id, i) => {
    const y = T + i * rowH;
    g.appendChild(svg("line", { class: "rowline", x1: 0, y1: y + rowH, x2: W, y2: y + rowH }));
    g.appendChild(svg("text", { x: 4, y: y + rowH / 2 + 4 }, execNames.get(id) || `executor ${id}`));
  });
  let copies = 0, won = 0;
  for (const a of all) {
    const end = a.finished !== null ? a.finished : now;
    if (end < t0) continue;
    const row = rows.indexOf(a.executor);
    const x = px(begin(a)), w = Math.max(2, px(end) - x);
    const kind = a.outcome === "failed" || a.outcome === "executor_lost" ? a.outcome : a.kind;
    const r = svg("rect", {
      class: `attempt ${kind} ${a.outcome}`, "data-kind": a.kind, "data-outcome": a.outcome,
      x: x.toFixed(1), y: T + row * rowH + 4, width: w.toFixed(1), height: rowH - 8, rx: 2,
    });
    if (a.outcome === "running") r.setAttribute("fill", "url(#running)");
    r.appendChild(svg("title", {},
      `job ${a.job} (${jobNames.get(a.job) || ""}) task ${a.task}, attempt ${a.id}: ${a.kind}, ${a.outcome}` +
      (a.outcome === "running" ? "" : `, ${secs(a.run_s)}`)));
    g.appendChild(r);
    if (a.kind === "copy") copies++;
    if (a.kind === "copy" && a.outcome === "committed") won++;
  }
  const defs = svg("defs");
  const pat = svg("pattern", { id: "running", width: 6, height: 6, patternUnits: "userSpaceOnUse",
                               patternTransform: "rotate(45)" });
  pat.appendChild(svg("rect", { width: 3, height: 6, fill: "#3b7dd8" }));
  pat.appendChild(svg("rect", { x: 3, width: 3, height: 6, fill: "#cfe0f7" }));
  defs.appendChild(pat);
  g.insertBefore(defs, g.firstChild);
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    const t = t0 + f * (now - t0);
    g.appendChild(svg("text", { x: px(t), y: H - 6, "text-anchor": f === 1 ? "end" : f === 0 ? "start" : "middle" },
                      f === 1 ? "now" : `-${secs(now - t)}`));
  }
  document.getElementById("timeline-note").textContent =
    `${all.length} attempts (${live.length} running), ${copies} copies, ${won} won by a copy`;
}

function renderLegend() {
  const box = document.getElementById("legend");
  for (const [cls, text] of [["first", "first attempt"], ["copy", "copy"], ["restart", "restart"],
                             ["failed", "failed"], ["winner", "winner (committed)"],
                             ["loser", "superseded / cancelled"], ["running", "running"]]) {
    const s = el("span");
    s.appendChild(el("i", { class: cls }));
    s.appendChild(document.createTextNode(text));
    box.appendChild(s);
  }
}

// `fleet`: /api/executors, whose totals are the whole fleet's (its rows
// are at most 200). `replica`: /api/replica's, null for a single scheduler.
function renderSummary(jobs, fleet, latency, replica) {
  const box = document.getElementById("summary");
  clear(box);
  const running = jobs.filter((j) => j.state === 'running').length;
  const items = [
    ['running jobs', running], ['finished jobs', latency.jobs_finished], ['executors', fleet.total],
    ['not healthy', fleet.not_healthy], ['slots busy', fleet.running + '/' + fleet.slots]
  ];
  if (replica) {
    items.push([
      'replica ' + replica.id,
      replica.leading ? 'leads' : (replica.leader_id ? 'follows ' + replica.leader_id : 'no leader known')
    ]);
    items.push(['term', replica.term]);
    for (const f of replica.followers) items.push(['replica ' + f.id + ' behind by', f.lag]);
  }
  for (const [label, value] of items) {
    const s = el("span", {}, label + " ");
    s.appendChild(el("b", {}, value));
    box.appendChild(s);
  }
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const [jobs, executors, attempts, latency, owners, replica] = await Promise.all([
      get('api/jobs'), get('api/executors'), get(`api/attempts?since=${lastSeq}`), get('api/latency'),
      get('api/owners'), get('api/replica')
    ]);
    renderOwners(owners);
    const jobList = renderJobs(jobs);
    const execList = renderExecutors(executors);
    renderCdf(latency);
    renderTimeline(attempts, execList);
    renderSummary(jobList, executors, latency, replica.replica);
    status.textContent = "updated " + new Date().toLocaleTimeString();
    status.classList.remove("error");
  } catch (e) {
    status.textContent = "cannot reach the scheduler: " + e.message;
    status.classList.add("error");
  }
}

renderLegend();
refresh();
setInterval(refresh, REFRESH_MS);
