// The lipstick try-on page: frames from the camera (or a photo / a generated clip) go to a Worker that runs the
// face pipeline in wasm; the page recolours the lips in the frame the landmarks belong to (wasmrt.vision.recolorLips)
// and shows frame and lips together, with per-stage times. With gestures (?gestures=1) the Worker tracks a hand
// too, and an open palm puts on the next colour.
// Tests drive it through window.tryon (see tests/test_tryon.py).
import { describeVariant } from "../../js_bindings/src/variants.js";
import * as vision from "../../js_bindings/vision/index.js";
import { $, bindVariantSelect, cameraSource, frameGrabber, params, samplePhoto, showError, showReadyAndStart, sourceSwitcher,
  workerClient } from "./page-kit.js";

const SWATCHES = ["#c2185b", "#d32f2f", "#ad1457", "#8e24aa", "#e57373", "#ff7043", "#6d4c41", "#5d4037"];
const CLIP_FRAMES = 48, CLIP_SIZE = 384;
const canvas = $("view");
const ctx = canvas.getContext("2d", { willReadFrequently: true });

const state = { color: SWATCHES[0], intensity: 0.6, showMesh: false, source: null, running: false, generation: 0,
  gestures: params.get("gestures") === "1", lastGesture: null };
/** With gestures on, what each gesture does when it appears (held, it acts once). */
const GESTURE_ACTIONS = { open_palm: () => selectColor(SWATCHES[(SWATCHES.indexOf(state.color) + 1) % SWATCHES.length]) };

// -- the worker ---------------------------------------------------------------------------------------------

const { call } = workerClient(new URL("./tryon-worker.js", import.meta.url));

// -- sources: each gives the next frame as ImageData-like RGBA pixels ------------------------------------------

const astronaut = () => samplePhoto("astronaut.png");

const clipCache = [];
const SOURCES = {
  async astronaut() {
    const img = await astronaut();
    return { note: "scikit-image's astronaut (public domain)", next: () => img, mirror: false };
  },
  async clip() {
    const img = await astronaut();
    let t = 0;
    return {
      note: `a ${CLIP_FRAMES}-frame clip generated from the photo (moving, turning, zooming)`,
      mirror: false,
      next: () => {
        const k = t++ % CLIP_FRAMES;
        return (clipCache[k] ??= vision.clipFrame(img, k, CLIP_FRAMES, CLIP_SIZE));
      },
    };
  },
  camera: () => cameraSource("your camera (mirrored); frames stay on this device"),
};

// -- per-stage statistics --------------------------------------------------------------------------------------

const WINDOW = 60;
const series = { detector: [], warp: [], landmarks: [], hands: [], worker: [], paint: [], frame: [], ran: [], stamps: [] };
const push = (k, v) => { series[k].push(v); if (series[k].length > WINDOW) series[k].shift(); };
const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : NaN);
const fmt = (v) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : "–");

function stats() {
  const s = series.stamps;
  const fps = s.length > 1 ? (1000 * (s.length - 1)) / (s[s.length - 1] - s[0]) : NaN;
  return {
    fps, detector: mean(series.detector), detectorRuns: mean(series.ran), warp: mean(series.warp),
    landmarks: mean(series.landmarks), hands: mean(series.hands), worker: mean(series.worker), paint: mean(series.paint),
    frame: mean(series.frame),
    frames: series.ran.length,
    capacityFps: 1000 / mean(series.frame), // what the pipeline could sustain without the display's frame cap
  };
}

function showStats() {
  const s = stats();
  $("s-fps").textContent = Number.isFinite(s.fps) ? `${s.fps.toFixed(1)} (pipeline alone: ${s.capacityFps.toFixed(0)})` : "–";
  $("s-detector").textContent = fmt(s.detector);
  $("s-runs").textContent = Number.isFinite(s.detectorRuns) ? `${(100 * s.detectorRuns).toFixed(0)}% of frames` : "–";
  for (const k of ["warp", "landmarks", "hands", "worker", "paint", "frame"]) $(`s-${k}`).textContent = fmt(s[k]);
}

// -- one frame -------------------------------------------------------------------------------------------------
// The page shows only finished frames: a frame's pixels go to the Worker, and when its landmarks come back the lips
// are recoloured in those same pixels, which are then put on the visible canvas in one step (with the mesh, if
// shown). Nothing else draws on it, so every frame the browser displays carries its lipstick.

const framePixels = frameGrabber(); // video frames are read through its canvas, never shown

function drawMesh(face) {
  ctx.fillStyle = "rgba(0, 230, 118, 0.9)";
  const lm = face.landmarks;
  for (let i = 0; i < lm.length; i += 3) ctx.fillRect(lm[i] - 0.75, lm[i + 1] - 0.75, 1.5, 1.5);
}

/** Frame and lips, together, on the visible canvas. */
function show(img, faces) {
  for (const face of faces) vision.recolorLips(img, face, { color: state.color, intensity: state.intensity });
  if (canvas.width !== img.width || canvas.height !== img.height) Object.assign(canvas, { width: img.width, height: img.height });
  ctx.putImageData(img, 0, 0);
  if (state.showMesh) faces.forEach(drawMesh);
}

/**
 * Run the pipeline on one frame and show it with its lips; returns the worker's result. `gen`: the loop generation
 * the frame belongs to (a frame that comes back after the source changed is not shown).
 */
async function processFrame(img, gen = state.generation) {
  const t0 = performance.now();
  const { width, height } = img;
  const res = await call("frame", { buffer: img.data.buffer, width, height }, [img.data.buffer]);
  const t1 = performance.now();
  if (gen !== state.generation) return res;
  if (state.gestures) onHands(res.hands);
  show(new ImageData(new Uint8ClampedArray(res.buffer), width, height), res.faces);
  const t2 = performance.now();
  if (res.ranDetector) push("detector", (res.ms.detectorPre ?? 0) + (res.ms.detector ?? 0) + (res.ms.detectorPost ?? 0));
  push("ran", res.ranDetector ? 1 : 0);
  push("warp", res.ms.warp ?? 0);
  push("landmarks", (res.ms.landmarks ?? 0) + (res.ms.landmarksPost ?? 0));
  if (state.gestures) push("hands", res.ms.hands ?? 0);
  push("worker", t1 - t0 - res.ms.total);
  push("paint", t2 - t1);
  push("frame", t2 - t0);
  push("stamps", t2);
  return res;
}

/** A gesture acts when it appears, not on every frame it is held. */
function onHands(hands) {
  const seen = hands.map((h) => h.gesture).find((g) => g in GESTURE_ACTIONS) ?? null;
  if (seen && seen !== state.lastGesture) GESTURE_ACTIONS[seen]();
  state.lastGesture = seen;
  $("gesture").textContent = hands.length ? `hand: ${(hands[0].gesture ?? "no gesture").replace("_", " ")}` : "no hand";
}

function selectColor(color) {
  state.color = color;
  for (const s of document.querySelectorAll(".swatch")) s.classList.toggle("active", s.title === color);
}

async function loop(gen) {
  while (state.running && gen === state.generation) {
    await processFrame(framePixels(state.source.next()), gen);
    showStats();
    await new Promise((r) => requestAnimationFrame(r)); // at most one frame per display refresh
  }
}

// no camera: the generated clip instead; a new source starts the tracker and the statistics afresh
const setSource = sourceSwitcher(state, SOURCES, { fallback: "clip", loop, async beforeRun(source) {
  canvas.classList.toggle("mirror", !!source.mirror);
  await call("reset");
  for (const k of Object.keys(series)) series[k].length = 0;
} });

function stop() {
  state.running = false;
  state.generation++;
}

// -- controls --------------------------------------------------------------------------------------------------

function buildControls() {
  for (const color of SWATCHES) {
    const b = Object.assign(document.createElement("button"), { className: "swatch", title: color });
    b.style.background = color;
    b.dataset.color = color;
    b.onclick = () => selectColor(color);
    $("swatches").append(b);
  }
  $("swatches").firstChild.classList.add("active");
  $("intensity").oninput = (e) => {
    state.intensity = e.target.value / 100;
    $("intensity-out").textContent = `${e.target.value}%`;
  };
  $("show-mesh").onchange = (e) => { state.showMesh = e.target.checked; };
  $("tracking").onchange = (e) => call("tracking", { on: e.target.checked });
  // a source clicked while the models load waits for them; if they failed, the click shows that failure again
  for (const b of document.querySelectorAll("#sources button")) {
    b.onclick = () => ready.then(() => setSource(b.dataset.source)).catch(showError);
  }
  bindVariantSelect();
  $("refine").checked = params.get("refine") === "1";
  $("refine").onchange = (e) => { params.set("refine", e.target.checked ? "1" : "0"); location.search = params.toString(); };
  $("int8").checked = params.get("int8") === "1";
  $("int8").onchange = (e) => { params.set("int8", e.target.checked ? "1" : "0"); location.search = params.toString(); };
  $("gestures").checked = state.gestures;
  $("gestures").onchange = (e) => { params.set("gestures", e.target.checked ? "1" : "0"); location.search = params.toString(); };
}

async function start() {
  buildControls();
  const info = await call("init", { variant: params.get("variant") ?? "auto", refine: params.get("refine") === "1",
    int8: params.get("int8") === "1", gestures: state.gestures });
  $("engine-info").textContent = `engine: the ${describeVariant(info.variant)} build (${info.reason})` +
    (info.int8 ? ", int8 face models" : "") + (info.builtFor ? `, module built for ${info.builtFor.join(", ")}` : "");
  await showReadyAndStart(setSource);
  return info;
}

const ready = start();
ready.catch(showError);

// For tests and the curious: run the pipeline on given pixels, switch sources, read the statistics.
window.tryon = {
  ready, vision, stats, stop, setSource,
  get color() { return state.color; },
  swatches: SWATCHES,
  setColor(color, intensity) { // the controls show what is painted
    selectColor(color);
    if (intensity !== undefined) {
      state.intensity = intensity;
      $("intensity").value = Math.round(100 * intensity);
      $("intensity-out").textContent = `${Math.round(100 * intensity)}%`;
    }
  },
  async process(pixels) {
    stop();
    return processFrame(framePixels(pixels));
  },
  reset: () => call("reset"),
  setTracking: (on) => call("tracking", { on }),
};
