// The playground: pick an engine variant, a model and an image; see what the model says and how long it took.
// URL parameters preselect everything (?variant=simd&worker=1&model=face_detector&image=astronaut.png&runs=5),
// and window.playground exposes the same actions to scripts (the Playwright tests use it).

import * as wasmrt from "wasmrt";
import { initWorker } from "wasmrt/worker";
import { kindOf, runTask } from "./tasks.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const MODELS_URL = new URL("../../models/", location.href);
const SAMPLES_URL = new URL("samples/", location.href);

const state = {
  engine: null, // wasmrt Runtime or WorkerRuntime
  engineKey: "",
  models: new Map(), // name -> {model, kind, loadMs, runs: []}
  current: null, // entry of models
  pixels: null, // ImageData of the current image
  imageName: "",
  last: null,
  webcam: null,
  runs: Math.max(1, +(params.get("runs") ?? 5)),
};

// -- status and errors -----------------------------------------------------------------------------------------

function setStatus(s, text) {
  $("status").dataset.state = s;
  $("status").textContent = text;
}

function showError(e) {
  console.error(e);
  const box = $("error");
  box.hidden = false;
  box.textContent = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
  box.dataset.errorName = e?.name ?? "Error";
  setStatus("error", "failed — see the message above");
}

let queue = Promise.resolve();
// One action at a time; an error is shown on the page and the next action starts from a clean state.
function act(fn) {
  const p = queue.then(async () => {
    try {
      const r = await fn();
      return r;
    } catch (e) {
      showError(e);
      throw e;
    }
  });
  queue = p.catch(() => {});
  return p;
}

const clearError = () => { $("error").hidden = true; $("error").textContent = ""; };
const ms = (x) => (x === undefined ? "–" : x < 10 ? `${x.toFixed(2)} ms` : `${x.toFixed(1)} ms`);
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

// -- engine ----------------------------------------------------------------------------------------------------

async function engine() {
  const variant = $("variant").value, worker = $("worker").checked;
  const key = `${variant}/${worker}`;
  if (state.engine && state.engineKey === key) return state.engine;
  await dropEngine();
  setStatus("loading", "starting the engine…");
  const rt = worker ? await initWorker({ variant }) : await wasmrt.init({ variant });
  state.engine = rt;
  state.engineKey = key;
  $("variant-info").textContent = `${wasmrt.describeVariant(rt.variant)}${worker ? " in a Worker" : ""} — ${rt.reason}`;
  $("t-variant").textContent = wasmrt.describeVariant(rt.variant) + (worker ? " (Worker)" : "");
  return rt;
}

async function dropEngine() {
  for (const { model } of state.models.values()) await model.release();
  state.models.clear();
  state.current = null;
  state.engine?.terminate?.();
  state.engine = null;
}

// -- models ----------------------------------------------------------------------------------------------------

async function loadModel(source, name) {
  const rt = await engine();
  if (state.models.has(name)) return state.models.get(name);
  setStatus("loading", `loading ${name}…`);
  const t0 = performance.now();
  const model = await rt.load(source, { name });
  const entry = { name, model, kind: kindOf(model), loadMs: performance.now() - t0, runs: [] };
  state.models.set(name, entry);
  return entry;
}

async function selectModel(source, name) {
  clearError();
  if (typeof source === "object" && state.models.has(name)) { // a new file with the same name replaces the old
    await state.models.get(name).model.release();
    state.models.delete(name);
  }
  state.current = null;
  const entry = await loadModel(source, name);
  state.current = entry;
  document.querySelectorAll("[data-model]").forEach((b) => b.classList.toggle("active", b.dataset.model === name));
  const m = entry.model;
  const fmt = (ts) => ts.map((t) => `${t.name} ${t.dtype} [${t.shape.join("×")}]`).join(", ");
  $("model-info").textContent = `${name}: ${entry.kind}; inputs ${fmt(m.inputs)}; outputs ${fmt(m.outputs)}` +
    (m.labels.length ? `; ${m.labels.length} labels` : "");
  showTimings(entry);
  return entry;
}

const bundled = (name) => selectModel(new URL(`${name}.wrt`, MODELS_URL).href, name);

function showTimings(entry) {
  $("t-load").textContent = ms(entry?.loadMs);
  $("t-first").textContent = ms(entry?.runs[0]);
  const later = entry?.runs.slice(1) ?? [];
  $("t-median").textContent = later.length ? `${ms(median(later))} (${later.length} runs)` : "–";
}

// -- images ----------------------------------------------------------------------------------------------------

async function setImage(blob, name) {
  clearError();
  stopWebcam();
  state.pixels = await wasmrt.image.getPixels(blob); // decoded without colour management: the file's own pixels
  state.imageName = name;
  document.querySelectorAll("[data-sample]").forEach((b) => b.classList.toggle("active", b.dataset.sample === name));
  drawImage();
}

async function sample(name) {
  const res = await fetch(new URL(name, SAMPLES_URL));
  if (!res.ok) throw new Error(`sample image ${name} is missing (HTTP ${res.status}); 'wasmrt demo' copies them`);
  await setImage(await res.blob(), name);
}

function drawImage() {
  const c = $("canvas");
  c.width = state.pixels.width;
  c.height = state.pixels.height;
  const ctx = c.getContext("2d");
  ctx.putImageData(state.pixels instanceof ImageData ? state.pixels
    : new ImageData(new Uint8ClampedArray(state.pixels.data), state.pixels.width, state.pixels.height), 0, 0);
  return ctx;
}

// -- running ---------------------------------------------------------------------------------------------------

async function run({ repeat } = {}) {
  const entry = state.current;
  if (!entry || !state.pixels) return null;
  clearError();
  setStatus("running", `running ${entry.name} on ${state.imageName}…`);
  const n = repeat ?? (entry.runs.length ? state.runs : state.runs + 1); // first run plus `runs` timed ones
  const helpers = {
    async timedRun(model, feeds) {
      let outputs;
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        outputs = await model.run(feeds);
        if (model === entry.model) entry.runs.push(performance.now() - t0);
      }
      return { outputs, ms: entry.runs.at(-1) };
    },
    detector: async () => (await loadModel(new URL("face_detector.wrt", MODELS_URL).href, "face_detector")).model,
  };
  const res = await runTask(entry.kind, entry.model, state.pixels, helpers);
  res.draw(drawImage());
  showResult(entry, res);
  showTimings(entry);
  state.last = { model: entry.name, kind: entry.kind, image: state.imageName, variant: state.engine.variant,
    worker: $("worker").checked, summary: res.summary, inputs: res.inputs, outputs: res.outputs,
    timings: { loadMs: entry.loadMs, firstRunMs: entry.runs[0], medianRunMs: median(entry.runs.slice(1).length ? entry.runs.slice(1) : entry.runs) } };
  setStatus("done", `${entry.name} on ${state.imageName}: ${ms(res.ms)} with the ${wasmrt.describeVariant(state.engine.variant)} build`);
  return state.last;
}

function showResult(entry, res) {
  const el = $("result");
  const s = res.summary;
  if (s.top) {
    el.innerHTML = "<table><tr><th>class</th><th>probability</th><th></th></tr>" + s.top.map((t) =>
      `<tr><td>${escape(t.label)}</td><td>${(100 * t.p).toFixed(1)}%</td>` +
      `<td><span class="bar" style="width:${Math.round(200 * t.p)}px"></span></td></tr>`).join("") + "</table>";
  } else if (s.faces) {
    el.textContent = s.faces.length ? `${s.faces.length} face(s): ` + s.faces.map((f) =>
      `score ${f.score.toFixed(3)} at (${f.x0.toFixed(0)}, ${f.y0.toFixed(0)})–(${f.x1.toFixed(0)}, ${f.y1.toFixed(0)})`).join("; ")
      : "no face found";
  } else if (s.landmarks && !s.meshShown) {
    el.textContent = `no face in the crop (face presence ${s.presence.toFixed(3)} < ${s.minPresence}): landmarks not drawn`;
  } else if (s.landmarks) {
    el.textContent = `${s.landmarks} landmarks` + (s.presence !== null ? `, face presence ${s.presence.toFixed(3)}` : "") +
      (s.faceFound ? " (crop from the face detector)" : " (no face detected: whole image)");
  } else if (s.maskMean !== undefined) {
    el.textContent = `person mask covers ${(100 * s.maskMean).toFixed(1)}% of the image`;
  } else {
    el.textContent = Object.entries(res.outputs).map(([k, t]) => `${k} [${t.shape.join("×")}]`).join(", ");
  }
}

const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

// -- webcam ----------------------------------------------------------------------------------------------------

async function startWebcam() {
  const video = $("video");
  video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
  await video.play();
  state.webcam = video;
  state.imageName = "webcam";
  document.querySelectorAll("[data-sample]").forEach((b) => b.classList.remove("active")); // one source at a time
  $("webcam").classList.add("active");
  const loop = async () => {
    if (state.webcam !== video) return;
    try {
      state.pixels = await wasmrt.image.getPixels(video);
      await act(() => run({ repeat: 1 }));
    } catch { stopWebcam(); return; }
    requestAnimationFrame(loop);
  };
  loop();
}

function stopWebcam() {
  if (!state.webcam) return;
  state.webcam.srcObject?.getTracks().forEach((t) => t.stop());
  state.webcam = null;
  $("webcam").classList.remove("active");
}

// -- wiring ----------------------------------------------------------------------------------------------------

const bytesB64 = (a) => {
  const u8 = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  let s = "";
  for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
  return btoa(s);
};

window.playground = {
  state,
  selectModel: (name) => act(() => bundled(name)),
  selectSample: (name) => act(() => sample(name)),
  run: (opts) => act(() => run(opts)),
  setEngine: (variant, worker = false) => act(async () => {
    $("variant").value = variant;
    $("worker").checked = worker;
    await engine();
  }),
  /** Last run's tensors as {name: {shape, dtype, b64}} (raw little-endian bytes), for tests. */
  tensors(which = "outputs") {
    const out = {};
    for (const [k, t] of Object.entries(state.last?.[which] ?? {})) out[k] = { shape: t.shape, dtype: t.dtype, b64: bytesB64(t.data) };
    return out;
  },
  async memory() { return state.engine?.stats ? (await state.engine.stats()).memoryBytes : state.engine?.memoryBytes; },
};

for (const b of document.querySelectorAll("[data-model]")) {
  b.onclick = () => act(async () => { await bundled(b.dataset.model); await run(); });
}
for (const b of document.querySelectorAll("[data-sample]")) {
  b.onclick = () => act(async () => { await sample(b.dataset.sample); await run(); });
}
$("webcam").onclick = () => (state.webcam ? stopWebcam() : act(startWebcam));
$("model-file").onchange = (e) => { const f = e.target.files[0]; if (f) act(async () => { await selectModel(f, f.name); await run(); }); };
$("image-file").onchange = (e) => { const f = e.target.files[0]; if (f) act(async () => { await setImage(f, f.name); await run(); }); };
const restart = () => act(async () => {
  const name = state.current?.name;
  await engine();
  if (name && !name.endsWith(".wrt")) { await bundled(name); await run(); }
});
$("variant").onchange = restart;
$("worker").onchange = restart;

document.addEventListener("dragover", (e) => { e.preventDefault(); document.body.classList.add("dragging"); });
document.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
document.addEventListener("drop", (e) => {
  e.preventDefault();
  document.body.classList.remove("dragging");
  const f = e.dataTransfer.files[0];
  if (!f) return;
  if (/\.wrt$/i.test(f.name)) act(async () => { await selectModel(f, f.name); await run(); });
  else act(async () => { await setImage(f, f.name); await run(); });
});

// Start: the engine, a model and an image from the URL (or the classifier on the cat), then run.
$("variant").value = params.get("variant") ?? "auto";
$("worker").checked = params.get("worker") === "1";
window.playground.ready = act(async () => {
  await engine();
  await bundled(params.get("model") ?? "efficientnet_lite0");
  await sample(params.get("image") ?? "chelsea.png");
  await run();
});
