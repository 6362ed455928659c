// Shared by the dashboard and the ablations page (each loads it first): the page's query parameters, plotly's
// settings, reading the JSON API, and elements whose text is only ever set through textContent (document texts
// come from crawled pages, names from job and ablation files: untrusted either way).
"use strict";

const params = new URLSearchParams(location.search);
const PLOT_CONFIG = { displayModeBar: false, responsive: true };

async function api(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
