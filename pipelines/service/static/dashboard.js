// The dashboard: polls the JSON API and redraws with plotly.js. Document texts are untrusted
// (they come from crawled pages), so they only ever reach the page through textContent.
"use strict";

const REFRESH_MS = Math.max(500, Number(params.get("refresh") || 2000));
const MARGIN = { l: 130, r: 10, t: 10, b: 40 };
let selected = params.get("job");
let reasonKey = null;
let dedupStage = null;

const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en", { maximumFractionDigits: 1 }));
const duration = (s) => (s === null || s === undefined ? "–" : s < 90 ? `${Math.round(s)} s` : `${(s / 60).toFixed(1)} min`);

function empty(div, message) {
  Plotly.purge(div);
  div.replaceChildren(el("div", message, "empty"));
  div.dataset.drawn = "0";
}

async function draw(div, traces, layout, count) {
  if (div.querySelector(".empty")) div.replaceChildren();
  await Plotly.react(div, traces, { margin: MARGIN, showlegend: traces.length > 1, ...layout }, PLOT_CONFIG);
  div.dataset.drawn = String(count);  // tests read this once plotly has rendered
}

function renderJobs(jobs) {
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren(...jobs.map((job) => {
    const row = el("tr");
    row.dataset.job = job.id;
    if (job.id === selected) row.className = "selected";
    const bar = el("span", "", "bar");
    const fill = el("span");
    fill.style.width = `${job.percent}%`;
    bar.append(fill);
    const done = el("td");
    done.append(bar, ` ${fmt(job.percent)}%`);
    row.append(el("td", job.id), el("td"), done, el("td", fmt(job.rate.records_per_s ?? job.rate.mean_records_per_s)),
      el("td", duration(job.eta_seconds)));
    row.children[1].append(el("span", job.state, `state ${job.state}`));
    row.addEventListener("click", () => select(job.id));
    return row;
  }));
}

function renderSummary(job) {
  document.getElementById("job-title").textContent = `${job.id} · ${job.phase}`;
  const cards = [
    ["state", job.state], ["done", `${fmt(job.percent)}%`], ["shards", `${job.shards.done} / ${job.shards.total}`],
    ["records read", fmt(job.records)], ["documents kept", fmt(job.documents)],
    ["records/s", fmt(job.rate.records_per_s ?? job.rate.mean_records_per_s)], ["ETA", duration(job.eta_seconds)],
    ["elapsed", duration(job.elapsed_seconds)],
  ];
  if (job.error) cards.push(["error", job.error]);
  document.getElementById("summary").replaceChildren(...cards.map(([label, value]) => {
    const card = el("div", label, "card");
    card.prepend(el("b", value));
    return card;
  }));
}

function funnelChart(funnel) {
  const div = document.getElementById("funnel");
  const read = funnel.stages.find((s) => s.stage === "read");
  if (!read) return empty(div, "no counters yet");
  // Documents left after each stage: a stage limited to some sources (`only`) sees fewer than
  // are left, so the funnel subtracts each stage's drops instead of plotting its docs_out.
  const labels = ["records read"];
  const values = [read.docs_in];
  let left = read.docs_in;
  for (const s of funnel.stages) {
    left -= Object.values(s.dropped).reduce((a, b) => a + b, 0) + Object.values(s.skipped).reduce((a, b) => a + b, 0);
    labels.push(s.stage);
    values.push(left);
  }
  // a row tall enough for its label at a readable size, however many stages (plotly shrank it to fit: unreadable)
  const height = Math.max(280, 40 + 28 * values.length);
  div.style.height = `${height}px`;
  return draw(div, [{ type: "funnel", y: labels, x: values, texttemplate: "%{value} · %{percentInitial:.0%}",
    textposition: "inside", textfont: { size: 12 }, constraintext: "none", marker: { color: "#3b82f6" } }],
  { height, yaxis: { automargin: true } }, values.length);
}

function reasonsChart(funnel) {
  const div = document.getElementById("reasons");
  const rows = [];
  for (const s of funnel.stages) for (const [reason, n] of Object.entries(s.dropped)) rows.push([`${s.stage} · ${reason}`, n]);
  if (!rows.length) return empty(div, "nothing dropped yet");
  rows.sort((a, b) => a[1] - b[1]);
  return draw(div, [{ type: "bar", orientation: "h", y: rows.map((r) => r[0]), x: rows.map((r) => r[1]),
    marker: { color: "#ef4444" } }], { yaxis: { automargin: true } }, rows.length);
}

function throughputChart(data) {
  const div = document.getElementById("throughput");
  const points = data.points.filter((p) => p.records_per_s !== null);
  if (!points.length) return empty(div, "no throughput samples yet");
  const x = points.map((p) => new Date(p.time * 1000));
  return draw(div, [
    { type: "scatter", mode: "lines+markers", name: "records/s", x, y: points.map((p) => p.records_per_s) },
    { type: "scatter", mode: "lines+markers", name: "documents kept/s", x, y: points.map((p) => p.documents_per_s) },
  ], { margin: { ...MARGIN, l: 50 }, legend: { orientation: "h", y: 1.1 } }, points.length);
}

function lossChart(curve) {
  const div = document.getElementById("loss");
  if (!curve || !curve.points.length) return empty(div, "no training metrics (train/metrics.jsonl)");
  const steps = curve.points.map((p) => p.step);
  const traces = [{ type: "scatter", mode: "lines", name: "loss", x: steps, y: curve.points.map((p) => p.loss),
    line: { color: "#94a3b8", width: 1 } }];
  if (curve.points.some((p) => p.loss_smoothed !== undefined)) {
    traces.push({ type: "scatter", mode: "lines", name: "smoothed", x: steps,
      y: curve.points.map((p) => p.loss_smoothed ?? null), line: { color: "#2563eb", width: 2 } });
  }
  const val = curve.points.filter((p) => p.val_loss !== undefined && p.val_loss !== null);
  if (val.length) {
    traces.push({ type: "scatter", mode: "markers", name: "validation", x: val.map((p) => p.step),
      y: val.map((p) => p.val_loss), marker: { color: "#16a34a", size: 8 } });
  }
  if (curve.spikes.length) {
    traces.push({ type: "scatter", mode: "markers", name: "spike", x: curve.spikes.map((p) => p.step),
      y: curve.spikes.map((p) => p.spike_loss ?? p.loss), text: curve.spikes.map((p) => p.reason || p.spike || ""),
      marker: { color: "#dc2626", symbol: "x", size: 10 } });
  }
  return draw(div, traces, { margin: { ...MARGIN, l: 50 }, xaxis: { title: { text: "step" } },
    legend: { orientation: "h", y: 1.1 } }, curve.points.length);
}

async function renderSamples(job) {
  const select = document.getElementById("reason-select");
  const index = await api(`/api/jobs/${job}/rejects`);
  const keys = [];
  for (const [stage, reasons] of Object.entries(index.stages)) {
    for (const [reason, n] of Object.entries(reasons)) if (n.sampled) keys.push(`${stage}/${reason}`);
  }
  if (select.options.length !== keys.length) {
    select.replaceChildren(...keys.map((k) => el("option", k)));
    if (keys.includes(reasonKey)) select.value = reasonKey;
  }
  reasonKey = select.value || null;
  const body = document.querySelector("#samples tbody");
  if (!reasonKey) return body.replaceChildren();
  const [stage, reason] = reasonKey.split("/").map(encodeURIComponent);
  const page = await api(`/api/jobs/${job}/rejects/${stage}/${reason}?limit=10&chars=400`);
  body.replaceChildren(...page.rows.map((r) => {
    const row = el("tr");
    row.append(el("td", r.id), el("td", r.url), el("td", r.detail), el("td", r.text));
    return row;
  }));
}

async function renderDedup(job) {
  const select = document.getElementById("dedup-select");
  const target = document.getElementById("dedup");
  const { stages } = await api(`/api/jobs/${job}/dedup`);
  if (select.options.length !== stages.length) select.replaceChildren(...stages.map((s) => el("option", s)));
  dedupStage = select.value || null;
  if (!dedupStage) return target.replaceChildren(el("div", "no dedup removals in this job", "empty"));
  const page = await api(`/api/jobs/${job}/dedup/${encodeURIComponent(dedupStage)}?limit=1&chars=1500`);
  const cluster = page.clusters[0];
  if (!cluster) return target.replaceChildren(el("div", "nothing removed", "empty"));
  const column = (title, doc) => {
    const box = el("div");
    box.append(el("b", title), el("div", `${doc.id} ${doc.url || ""}`, "muted"), el("pre", doc.text || ""));
    return box;
  };
  const removed = cluster.removed[0];
  target.replaceChildren(column("kept", cluster.survivor || {}),
    column(`removed (${cluster.removed.length} in cluster): ${removed.detail || ""}`, removed));
}

function select(job) {
  selected = job;
  const url = new URL(location.href);
  url.searchParams.set("job", job);
  history.replaceState(null, "", url);
  reasonKey = null;
  refresh();
}

async function refresh() {
  try {
    const { jobs } = await api("/api/jobs");
    if (!selected && jobs.length) selected = jobs[0].id;
    renderJobs(jobs);
    const job = jobs.find((j) => j.id === selected);
    if (job) {
      renderSummary(job);
      const id = encodeURIComponent(job.id);
      const [funnel, through, curve] = await Promise.all([
        api(`/api/jobs/${id}/funnel`), api(`/api/jobs/${id}/throughput`),
        job.has.train ? api(`/api/jobs/${id}/train?max_points=2000`) : Promise.resolve(null),
      ]);
      await Promise.all([funnelChart(funnel), reasonsChart(funnel), throughputChart(through), lossChart(curve),
        renderSamples(id), renderDedup(id)]);
    }
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  } catch (error) {
    document.getElementById("updated").textContent = `error: ${error.message}`;
  }
}

document.getElementById("reason-select").addEventListener("change", (e) => { reasonKey = e.target.value; refresh(); });
document.getElementById("dedup-select").addEventListener("change", () => refresh());
refresh();
setInterval(refresh, REFRESH_MS);
