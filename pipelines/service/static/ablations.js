// The ablations page: polls /api/ablations and one ablation's detail, draws its curves with plotly.js.
// Names and texts come from the ablation's files: they only ever reach the page through textContent.
"use strict";

const REFRESH_MS = Math.max(500, Number(params.get("refresh") || 3000));
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
let selected = params.get("ablation");
let curveKey = params.get("curve");

const num = (v, digits = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const signed = (v) => (v === null || v === undefined ? "–" : `${v >= 0 ? "+" : ""}${Number(v).toFixed(4)}`);
const weights = (w) => Object.entries(w || {}).map(([s, x]) => `${s} ${Number(x).toFixed(3)}`).join(", ");

function row(cells) {
  const tr = el("tr");
  tr.append(...cells.map((c) => el("td", c)));
  return tr;
}

function renderList(ablations) {
  const body = document.querySelector("#ablations tbody");
  body.replaceChildren(...ablations.map((a) => {
    const tr = row([a.name, "", `${a.runs.done} / ${a.runs.total}`, a.variants.join(", ")]);
    tr.dataset.ablation = a.name;
    tr.children[1].append(el("span", a.state, `state ${a.state}`));
    if (a.name === selected) tr.className = "selected";
    tr.addEventListener("click", () => select(a.name));
    return tr;
  }));
}

function renderSummary(a) {
  document.getElementById("ablation-title").textContent = `${a.name} · ${a.phase}`;
  const cards = [["state", a.state], ["baseline", a.baseline ?? "–"], ["variants", a.variants.length],
    ["runs done", `${a.runs.done} / ${a.runs.total}`]];
  if (a.about) cards.push(["tokens per run", Number(a.about.tokens_per_run).toLocaleString("en")],
    [`seed${a.about.seeds.length === 1 ? "" : "s"}`, a.about.seeds.join(", ")]);
  if (a.error) cards.push(["error", a.error]);
  document.getElementById("summary").replaceChildren(...cards.map(([label, value]) => {
    const card = el("div", label, "card");
    card.prepend(el("b", value));
    return card;
  }));
}

const METRIC_ORDER = ["loss", "bits_per_byte", "accuracy", "accuracy_norm"];

function curveChart(curves, order) {
  const div = document.getElementById("curves");
  const select = document.getElementById("curve-select");
  // loss first: it carries the signal (a tiny model's accuracy sits near chance)
  const pairs = [...new Map(curves.map((c) => [`${c.set} · ${c.metric}`, c])).entries()];
  pairs.sort(([, a], [, b]) => METRIC_ORDER.indexOf(a.metric) - METRIC_ORDER.indexOf(b.metric));
  const keys = pairs.map(([key]) => key);
  if (select.options.length !== keys.length || [...select.options].some((o, i) => o.value !== keys[i])) {
    select.replaceChildren(...keys.map((k) => el("option", k)));
  }
  if (keys.includes(curveKey)) select.value = curveKey;
  curveKey = select.value || null;
  const shown = curves.filter((c) => `${c.set} · ${c.metric}` === curveKey);
  if (!shown.length) {
    Plotly.purge(div);
    div.replaceChildren(el("div", "no evaluated checkpoint yet", "empty"));
    div.dataset.drawn = "0";
    return null;
  }
  if (div.querySelector(".empty")) div.replaceChildren();
  const variants = [...new Set(shown.map((c) => c.variant))];
  variants.sort((a, b) => (order.indexOf(a) + 1 || Infinity) - (order.indexOf(b) + 1 || Infinity));
  const traces = [];
  variants.forEach((variant, i) => {
    const color = COLORS[i % COLORS.length];
    const seeds = shown.filter((c) => c.variant === variant);
    for (const c of seeds) {
      traces.push({ type: "scatter", mode: "lines", x: c.tokens, y: c.values, name: `${variant} seed ${c.seed}`,
        legendgroup: variant, showlegend: false, line: { color, width: 1 }, opacity: 0.35, hoverinfo: "x+y+name" });
    }
    // the mean over seeds at each checkpoint every seed reached
    const steps = seeds[0].tokens.filter((t) => seeds.every((c) => c.tokens.includes(t)));
    const mean = steps.map((t) => seeds.reduce((sum, c) => sum + c.values[c.tokens.indexOf(t)], 0) / seeds.length);
    traces.push({ type: "scatter", mode: "lines+markers", x: steps, y: mean, name: variant, legendgroup: variant,
      line: { color, width: 3 } });
  });
  const [set, metric] = curveKey.split(" · ");
  return Plotly.react(div, traces, { margin: { l: 60, r: 10, t: 10, b: 45 }, showlegend: true,
    xaxis: { title: { text: "tokens seen" } }, yaxis: { title: { text: `${set} ${metric}` } },
    legend: { orientation: "h", y: 1.12 } }, PLOT_CONFIG).then(() => {
    div.dataset.drawn = String(variants.length);  // tests read this once plotly has rendered
  });
}

function renderTable(a) {
  const body = document.querySelector("#results tbody");
  body.replaceChildren(...a.table.map((r) => {
    const verdict = r.exceeds === null ? "–" : r.better ? "yes, better" : r.exceeds ? "yes, worse" : "no";
    const tr = row([r.variant, r.set, r.metric, num(r.mean), num(r.spread), signed(r.difference), verdict]);
    if (r.better) tr.className = "better";
    else if (r.exceeds) tr.className = "worse";
    return tr;
  }));
}

function renderMixture(search) {
  const panel = document.getElementById("mixture-panel");
  panel.hidden = !search || !search.proposal;
  if (panel.hidden) return;
  const fit = search.fit;
  const rho = fit.loo_spearman === null ? "–" : fit.loo_spearman.toFixed(2);
  document.getElementById("mixture-title").textContent = `Mixture search over ${search.variant}'s sources: ` +
    `${search.set} ${search.metric}, ${fit.kind} fit on ${fit.proxies} proxies (leave-one-out Spearman ${rho})`;
  const measured = (search.verification || {}).mixtures || {};
  const uniform = Object.fromEntries(search.sources.map((s) => [s, 1 / search.sources.length]));
  const given = { "mixture-proposed": search.proposal.weights, "mixture-natural": search.natural,
    "mixture-uniform": uniform };
  document.querySelector("#mixture tbody").replaceChildren(...Object.entries(given).map(([name, w]) => {
    const m = measured[name] || {};
    const exceeds = m.exceeds === undefined || m.exceeds === null ? "–" : m.exceeds ? "yes" : "no";
    const lower = m.proposed_lower_on === undefined ? "–" : `${m.proposed_lower_on} of ${m.values.length}`;
    return row([name, weights(w), num(search.proposal.predicted[name]), num(m.mean), num(m.spread),
      signed(m.proposed_minus), exceeds, lower]);
  }));
  document.getElementById("mixture-verdict").textContent = fit.verdict || "";
}

function select(name) {
  selected = name;
  const url = new URL(location.href);
  url.searchParams.set("ablation", name);
  history.replaceState(null, "", url);
  refresh();
}

async function refresh() {
  try {
    const { ablations } = await api("/api/ablations");
    if (!selected && ablations.length) selected = ablations[0].name;
    renderList(ablations);
    if (ablations.some((a) => a.name === selected)) {
      const detail = await api(`/api/ablations/${encodeURIComponent(selected)}`);
      renderSummary(detail);
      renderTable(detail);
      renderMixture(detail.mixture_search);
      await curveChart(detail.curves, detail.variants);
    }
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  } catch (error) {
    document.getElementById("updated").textContent = `error: ${error.message}`;
  }
}

document.getElementById("curve-select").addEventListener("change", (e) => { curveKey = e.target.value; refresh(); });
refresh();
setInterval(refresh, REFRESH_MS);
