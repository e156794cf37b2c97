// The speed page: our wasm builds in this page vs the native engine on the server, for the bundled models.
// URL parameters preselect everything (?models=mobilenet_v2&variants=simd,relaxed&rounds=2&warmup=1&run=1), and
// window.speedPage exposes the state and run() to scripts (the Playwright test uses it).

import * as wasmrt from "wasmrt";
import { drawChart } from "./speed-chart.js";
import { gflops, median, randomFeeds, timeEngines } from "./speed-bench.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const MODELS_URL = new URL("../../models/", location.href);
const API = new URL("/api/", location.href);

const state = { models: [], rows: [], running: false, runtimes: new Map() };

function setStatus(s, text) {
  $("status").dataset.state = s;
  $("status").textContent = text;
}

function showError(e) {
  console.error(e);
  $("error").hidden = false;
  $("error").textContent = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
  setStatus("error", "failed — see the message above");
}

async function api(path) {
  const res = await fetch(new URL(path, API));
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}: ${body.error ?? res.statusText}`);
  return body;
}

function browserName() {
  const ua = navigator.userAgent;
  const m = ua.match(/(Firefox|Edg|Chrome|Version)\/(\d+)/);
  if (!m) return "browser";
  return { Edg: "Edge", Version: "Safari" }[m[1]] ?? m[1] + (ua.includes("Headless") ? " headless" : "") + " " + m[2];
}

// -- controls --------------------------------------------------------------------------------------------------

function checked(id) {
  return [...$(id).querySelectorAll("input:checked")].map((x) => x.value);
}

function preselect(id, values) {
  for (const box of $(id).querySelectorAll("input")) box.checked = values.includes(box.value) && !box.disabled;
}

function setupVariants() {
  const features = wasmrt.probe(wasmrt.defaultHost());
  for (const box of $("variants").querySelectorAll("input")) {
    const f = features[box.value];
    box.disabled = !f.available;
    box.closest("label").classList.toggle("unavailable", !f.available);
    box.closest("label").title = f.reason;
  }
  // default: the SIMD builds this browser runs; scalar only on request (it is an order of magnitude slower)
  const wanted = params.get("variants")?.split(",") ?? ["relaxed", "simd"];
  preselect("variants", wanted);
  const missing = Object.entries(features).filter(([, f]) => !f.available).map(([v, f]) => `${v}: ${f.reason}`);
  $("variant-info").textContent = missing.length ? `Not available here — ${missing.join("; ")}` : "";
}

async function setupModels() {
  state.models = (await api("models")).models;
  $("models").replaceChildren(...state.models.map((m) => {
    const label = document.createElement("label");
    const shape = m.inputs.map((t) => t.shape.join("×")).join(", ");
    label.innerHTML = `<input type="checkbox" value="${m.name}"> ${m.name} ` +
      `<span class="muted">${(m.macs / 1e6).toFixed(0)} MMAC, input ${shape}${m.randomWeights ? ", random weights" : ""}</span>`;
    return label;
  }));
  if (!state.models.length) $("models").textContent = "no converted models: run `wasmrt demo` (it converts them)";
  preselect("models", params.get("models")?.split(",") ?? state.models.map((m) => m.name));
}

function settings() {
  const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, Math.round(+v || 0)));
  return { warmup: clamp($("warmup").value, 0, 50), rounds: clamp($("rounds").value, 1, 200) };
}

// -- results ---------------------------------------------------------------------------------------------------

// about three significant digits: the table stays readable and within 0.5% of the measured value
const fmt = (x) => x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : x >= 1 ? 2 : 3);

function render() {
  const native = Object.fromEntries(state.rows.filter((r) => r.host === "native").map((r) => [r.model, r.median]));
  $("results").tBodies[0].replaceChildren(...state.rows.map((r) => {
    const tr = document.createElement("tr");
    tr.className = r.host === "native" ? "native" : "wasm";
    tr.dataset.model = r.model;
    tr.dataset.host = r.host;
    tr.dataset.target = r.target;
    const ratio = native[r.model] ? r.median / native[r.model] : undefined;
    const cells = [[r.model], [r.hostLabel], [r.label, r.target], [fmt(r.median), "", true], [fmt(r.min), "", true],
      [fmt(r.gflops), "", true], [ratio === undefined ? "–" : `${ratio.toFixed(2)}×`, "", true]];
    for (const [text, title, num] of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      if (title) td.title = `kernel target: ${title}`;
      if (num) td.className = "num";
      tr.appendChild(td);
    }
    return tr;
  }));
  drawChart($("chart"), state.rows);
}

// -- running ---------------------------------------------------------------------------------------------------

async function runtime(variant) {
  if (!state.runtimes.has(variant)) state.runtimes.set(variant, await wasmrt.init({ variant }));
  return state.runtimes.get(variant);
}

async function runModel(info, variants, opts, step) {
  step(`${info.name}: native engine on the server…`);
  const nat = await api(`native?model=${encodeURIComponent(info.name)}&rounds=${opts.rounds}&warmup=${opts.warmup}`);
  state.rows.push({ model: info.name, host: "native", hostLabel: "native (server)", variant: "native",
    label: `wasmrt ${nat.target}`, short: `native ${nat.target}`, target: nat.target,
    median: nat.median_ms, min: nat.min_ms, gflops: nat.gflops });
  render();

  step(`${info.name}: loading the wasm builds…`);
  const bytes = new Uint8Array(await (await fetch(new URL(`${info.name}.wrt`, MODELS_URL))).arrayBuffer());
  const engines = [];
  try {
    for (const v of variants) {
      const rt = await runtime(v);
      engines.push({ id: v, target: rt.target, model: rt.loadBytes(bytes, { name: info.name }) });
    }
    const feeds = randomFeeds(engines[0].model);
    for (const e of engines) e.model.runSync(feeds); // first run: page faults and lazy compilation, not counted
    const progress = (done, total) => step(`${info.name}: wasm run ${done}/${total}`, done / total);
    const times = await timeEngines(engines, feeds, opts, progress);
    for (const e of engines) {
      const med = median(times[e.id]);
      state.rows.push({ model: info.name, host: "browser", hostLabel: browserName(), variant: e.id,
        label: `wasmrt ${wasmrt.describeVariant(e.id)}`, short: wasmrt.describeVariant(e.id), target: e.target,
        median: med, min: Math.min(...times[e.id]), gflops: gflops(info.macs, med), times: times[e.id] });
    }
  } finally {
    for (const e of engines) e.model.release();
  }
  render();
}

async function run() {
  if (state.running) return;
  const models = state.models.filter((m) => checked("models").includes(m.name));
  const variants = checked("variants");
  const opts = settings();
  $("error").hidden = true;
  if (!models.length || !variants.length) {
    setStatus("idle", "pick at least one model and one WebAssembly build");
    return;
  }
  state.running = true;
  state.rows = [];
  $("run").disabled = true;
  render();
  try {
    for (const [i, info] of models.entries()) {
      await runModel(info, variants, opts, (text, frac = 0) => {
        setStatus("running", `${i + 1}/${models.length} ${text}`);
        $("progress").value = (i + frac) / models.length;
      });
    }
    $("progress").value = 1;
    const what = `${models.length} model(s), ${variants.length} wasm build(s)`;
    setStatus("done", `done: ${what}, ${opts.rounds} rounds after ${opts.warmup} warm-up`);
  } catch (e) {
    showError(e);
  } finally {
    state.running = false;
    $("run").disabled = false;
  }
}

window.speedPage = { state, run };

try {
  setupVariants();
  if (params.has("rounds")) $("rounds").value = params.get("rounds");
  if (params.has("warmup")) $("warmup").value = params.get("warmup");
  $("run").addEventListener("click", run);
  $("host-info").textContent = `${navigator.userAgent} · ${navigator.hardwareConcurrency ?? "?"} logical cores · ` +
    `cross-origin isolated: ${self.crossOriginIsolated}`;
  await setupModels();
  render();
  setStatus("idle", "ready: pick models and builds, then Run");
  if (params.get("run") === "1") await run();
} catch (e) {
  showError(e);
}
