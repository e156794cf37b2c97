// The teach-the-camera page: a person names 2-5 classes, adds a few photos of each (a snapshot of the camera, or
// files), and trains: EfficientNet-Lite0's features, computed once per photo, feed a new classifier trained in the
// page's Worker (teach-worker.js, teach-core.js). Then every frame of the camera (or the photo shown) is classified
// live: the class and its confidence under the frame, in the class's colour. Save keeps the tuned model in
// IndexedDB (teach-store.js); reload puts it back in use, also after the page is reloaded.
// Tests drive it through its controls and read window.teachPage (tests/test_teach_pages.py).
import { describeVariant } from "../../js_bindings/src/variants.js";
import { getPixels } from "../../js_bindings/src/image.js";
import { $, bindVariantSelect, cameraSource, frameGrabber, params, samplePhoto, showError, showReadyAndStart, sourceSwitcher,
  workerClient } from "./page-kit.js";
import { BANNER, CLASS_COLORS, TEACH } from "./teach-core.js";
import { loadModel, saveModel } from "./teach-store.js";

const DEFAULT_NAMES = ["first", "second", "third", "fourth", "fifth"];
const THUMB = 40;

const canvas = $("view");
const ctx = canvas.getContext("2d", { willReadFrequently: true });
const { call } = workerClient(new URL("./teach-worker.js", import.meta.url));
const framePixels = frameGrabber();
const state = { classes: [], source: null, sourceName: null, running: false, generation: 0, trained: null,
  prediction: null, frames: 0, photo: null };

// -- classes and their photos ---------------------------------------------------------------------------------

function classRow(k, name) {
  const row = document.createElement("div");
  row.className = "class";
  row.style.setProperty("--color", CLASS_COLORS[k]);
  row.innerHTML = `<div class="head"><input class="name" aria-label="class ${k + 1} name">
    <button class="snap">snapshot</button>
    <label class="file">photos <input type="file" class="files" accept="image/*" multiple></label>
    <span class="count muted">0 photos</span></div><div class="thumbs"></div>`;
  const entry = { row, samples: [] };
  row.querySelector(".name").value = name;
  row.querySelector(".snap").onclick = () => snapshot(entry).catch(showError);
  row.querySelector(".files").onchange = (e) => addFiles(entry, [...e.target.files]).catch(showError);
  return entry;
}

function setClassCount(n) {
  n = Math.max(TEACH.minClasses, Math.min(TEACH.maxClasses, n));
  while (state.classes.length > n) {
    const gone = state.classes.pop();
    for (const s of gone.samples) call("remove", { id: s.id });
    gone.row.remove();
  }
  while (state.classes.length < n) {
    const k = state.classes.length;
    const entry = classRow(k, DEFAULT_NAMES[k]);
    state.classes.push(entry);
    $("classes").append(entry.row);
  }
}

function showCount(entry) {
  const n = entry.samples.length;
  entry.row.querySelector(".count").textContent = `${n} photo${n === 1 ? "" : "s"}`;
}

/** A photo (RGBA pixels) into a class: a thumbnail here, its input tensor in the Worker. */
async function addSample(entry, img) {
  const thumb = document.createElement("canvas");
  Object.assign(thumb, { width: THUMB, height: THUMB, title: "click to drop this photo" });
  const side = Math.min(img.width, img.height);
  const src = new OffscreenCanvas(img.width, img.height);
  src.getContext("2d").putImageData(new ImageData(new Uint8ClampedArray(img.data), img.width, img.height), 0, 0);
  thumb.getContext("2d").drawImage(src, (img.width - side) / 2, (img.height - side) / 2, side, side, 0, 0, THUMB, THUMB);
  const copy = new Uint8ClampedArray(img.data);
  const id = await call("add", { buffer: copy.buffer, width: img.width, height: img.height }, [copy.buffer]);
  const sample = { id, thumb };
  thumb.onclick = () => {
    entry.samples.splice(entry.samples.indexOf(sample), 1);
    thumb.remove();
    showCount(entry);
    call("remove", { id }).catch(showError);
  };
  entry.samples.push(sample);
  entry.row.querySelector(".thumbs").append(thumb);
  showCount(entry);
}

async function addFiles(entry, files) {
  for (const f of files) await addSample(entry, await getPixels(f));
}

/** The frame on screen (as the source gives it, unmirrored) into a class. */
async function snapshot(entry) {
  if (!state.source) throw new Error("no source to take a snapshot of: choose the camera or a photo");
  await addSample(entry, framePixels(state.source.next()));
}

// -- sources: the camera, or a photo (a file, or the cat until one is chosen) ---------------------------------------

const SOURCES = {
  camera: () => cameraSource("your camera (shown mirrored); frames stay on this device"),
  async photo() {
    const img = state.photo ?? await samplePhoto("chelsea.png");
    return { note: state.photo ? "the photo you chose" : "scikit-image's cat (public domain): choose a photo above",
      mirror: false, next: () => img };
  },
};

// no camera: a photo instead; loop is hoisted from below
const setSource = sourceSwitcher(state, SOURCES, { fallback: "photo", loop });

// -- the live view: the frame, and once trained its class under it ---------------------------------------------------

function draw(img, mirror, prediction) {
  if (canvas.width !== img.width || canvas.height !== img.height) Object.assign(canvas, { width: img.width, height: img.height });
  ctx.putImageData(img, 0, 0);
  if (mirror) { // mirrored like a mirror, the class name still readable
    ctx.save();
    ctx.scale(-1, 1);
    ctx.drawImage(canvas, -img.width, 0);
    ctx.restore();
  }
  if (!prediction) return;
  const h = Math.round(BANNER * img.height), y = img.height - h;
  ctx.fillStyle = CLASS_COLORS[prediction.index];
  ctx.fillRect(0, y, img.width, h);
  ctx.fillStyle = "#fff";
  ctx.font = `600 ${Math.round(0.6 * h)}px system-ui, sans-serif`;
  ctx.textBaseline = "middle";
  ctx.fillText(`${prediction.label} ${(100 * prediction.confidence).toFixed(0)}%`, Math.round(0.4 * h), y + h / 2);
}

function showPrediction(p) {
  const color = CLASS_COLORS[p.index];
  $("prediction").className = "";
  $("prediction").style.setProperty("--color", color);
  $("prediction").innerHTML = "";
  const b = Object.assign(document.createElement("b"), { textContent: p.label });
  $("prediction").append(b, ` ${(100 * p.confidence).toFixed(1)}% · ${p.ms} ms`);
  $("bars").replaceChildren(...p.probs.map((v, k) => {
    const row = document.createElement("div");
    row.className = "bar";
    row.style.setProperty("--color", CLASS_COLORS[k]);
    row.innerHTML = `<span></span><span><i style="width: ${(100 * v).toFixed(1)}%"></i></span><span>${(100 * v).toFixed(1)}%</span>`;
    row.firstChild.textContent = state.trained.classes[k];
    return row;
  }));
}

async function processFrame(frame, mirror, gen = state.generation) {
  const img = framePixels(frame);
  let prediction = null;
  if (state.trained) {
    const copy = new Uint8ClampedArray(img.data);
    prediction = await call("classify", { buffer: copy.buffer, width: img.width, height: img.height }, [copy.buffer]);
  }
  if (gen !== state.generation) return prediction;
  draw(img, mirror, prediction);
  if (prediction) showPrediction(prediction);
  state.prediction = prediction;
  state.frames++;
  return prediction;
}

async function loop(gen) {
  while (state.running && gen === state.generation) {
    await processFrame(state.source.next(), state.source.mirror, gen);
    await new Promise((r) => requestAnimationFrame(r));
  }
}

// -- train, save, reload --------------------------------------------------------------------------------------------

function setTrained(classes, note) {
  state.trained = { classes };
  state.generation++; // the live loop restarts, classifying
  if (state.source) { state.running = true; loop(state.generation).catch(showError); }
  $("save").disabled = false;
  $("status").dataset.state = "trained";
  $("status").textContent = note;
}

async function train() {
  const classes = state.classes.map((c) => c.row.querySelector(".name").value);
  const samples = state.classes.flatMap((c, label) => c.samples.map((s) => ({ id: s.id, label })));
  $("train").disabled = true;
  $("status").dataset.state = "training";
  $("status").textContent = `training on ${samples.length} photos…`;
  try {
    const r = await call("train", { classes, samples }, [], ({ epoch, epochs, loss }) => {
      $("progress").value = epoch / epochs;
      $("train-info").textContent = `epoch ${epoch} of ${epochs} · loss ${loss.toFixed(4)}`;
    });
    $("progress").value = 1;
    $("train-info").textContent = `${r.losses.length} epochs in ${(r.ms / 1000).toFixed(2)} s (features included) · ` +
      `loss ${r.losses[0].toFixed(3)} → ${r.losses.at(-1).toFixed(4)}`;
    setTrained(r.classes, `trained: ${r.classes.length} classes, ${samples.length} photos`);
  } catch (e) {
    $("status").dataset.state = state.trained ? "trained" : "ready";
    $("status").textContent = state.trained ? "trained (the last run failed)" : "ready";
    throw e;
  } finally {
    $("train").disabled = false;
  }
}

async function save() {
  const bytes = new Uint8Array(await call("export"));
  const record = { bytes, classes: state.trained.classes, savedAt: new Date().toISOString() };
  await saveModel(record);
  $("store-info").textContent = `saved on this device: ${record.classes.join(", ")} ` +
    `(${(bytes.length / 1e6).toFixed(1)} MB, ${new Date(record.savedAt).toLocaleString()})`;
  return { bytes: bytes.length, classes: record.classes };
}

async function reload() {
  const record = await loadModel();
  if (!record) throw new Error("no saved model on this device yet: train, then save");
  const { labels } = await call("use", { bytes: record.bytes });
  setClassCount(labels.length);
  labels.forEach((name, k) => { state.classes[k].row.querySelector(".name").value = name; });
  $("store-info").textContent = `reloaded the model saved ${new Date(record.savedAt).toLocaleString()}`;
  setTrained(labels, `trained: the saved model (${labels.join(", ")})`);
  return { classes: labels };
}

// -- start ------------------------------------------------------------------------------------------------------

async function start() {
  setClassCount(3);
  bindVariantSelect();
  $("add-class").onclick = () => setClassCount(state.classes.length + 1);
  $("remove-class").onclick = () => setClassCount(state.classes.length - 1);
  $("train").onclick = () => train().catch(showError);
  $("save").onclick = () => save().catch(showError);
  $("reload").onclick = () => reload().catch(showError);
  $("photo-file").onchange = async (e) => {
    if (!e.target.files.length) return;
    state.photo = await getPixels(e.target.files[0]);
    await setSource("photo");
  };
  for (const b of document.querySelectorAll("#sources button")) {
    b.onclick = () => ready.then(() => setSource(b.dataset.source)).catch(showError);
  }
  const info = await call("init", { variant: params.get("variant") ?? "auto" });
  $("engine-info").textContent = `engine: the ${describeVariant(info.variant)} build (${info.reason}), in a Worker`;
  const saved = await loadModel().catch(() => undefined); // no storage (a private window): save says why later
  if (saved) $("store-info").textContent = `a model saved ${new Date(saved.savedAt).toLocaleString()} ` +
    `(${saved.classes.join(", ")}): reload puts it back`;
  await showReadyAndStart(setSource);
  return info;
}

const ready = start();
ready.catch(showError);

// For tests and the curious: the state a person sees, and frames classified on demand.
window.teachPage = {
  ready, setSource, train, save, reload,
  stop() { state.running = false; state.generation++; },
  get status() { return { state: $("status").dataset.state, text: $("status").textContent }; },
  get prediction() { return state.prediction; },
  get frames() { return state.frames; },
  get generation() { return state.generation; }, // changes with the source (and when training ends)
  counts: () => state.classes.map((c) => c.samples.length),
  view: () => ({ canvasWidth: canvas.width, canvasHeight: canvas.height, banner: BANNER }),
  colors: CLASS_COLORS,
};
