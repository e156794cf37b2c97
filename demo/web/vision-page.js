// What the segmentation and hands pages share: the sources (camera, photo, a clip made from the photo), the frame
// loop, where the pipeline runs (in a Worker, or on the page's thread: ?worker=0, the page's toggle) and the
// per-frame timings. Each page gives its pipeline's kind, how to draw a result and which timings to show.
import { describeVariant } from "../../js_bindings/src/variants.js";
import { clipFrame } from "../../js_bindings/vision/index.js";
import { $, bindVariantSelect, cameraSource, frameGrabber, params, samplePhoto, showError, showReadyAndStart, sourceSwitcher,
  workerClient } from "./page-kit.js";
import { createPipeline } from "./vision-run.js";

export { $, params };
const CLIP_FRAMES = 48, CLIP_SIZE = 384;

// -- where the pipeline runs: the same calls either way ---------------------------------------------------------

function inWorker() {
  let onFailure = showError;
  const { call } = workerClient(new URL("./vision-worker.js", import.meta.url), (e) => onFailure(e));
  return {
    where: "worker",
    onError: (f) => { onFailure = f; },
    init: (kind, options) => call("init", { kind, options }),
    async frame(img) {
      const { width, height } = img;
      const r = await call("frame", { buffer: img.data.buffer, width, height }, [img.data.buffer]);
      if (r.pixels) r.pixels = new ImageData(new Uint8ClampedArray(r.pixels.buffer), r.pixels.width, r.pixels.height);
      return r;
    },
    configure: (settings) => call("configure", settings),
    reset: () => call("reset"),
  };
}

function onPage() {
  let pipeline = null;
  return {
    where: "page",
    onError() {},
    async init(kind, options) { pipeline = await createPipeline(kind, options); return pipeline.info; },
    async frame(img) {
      const r = await pipeline.frame(img);
      if (r.pixels) r.pixels = new ImageData(r.pixels.data, r.pixels.width, r.pixels.height);
      return r;
    },
    async configure(settings) { pipeline.configure(settings); },
    async reset() { pipeline.reset(); },
  };
}

// -- sources: each gives the next frame (RGBA pixels, or the video element) -------------------------------------

function sources(file, note) {
  const clip = [];
  return {
    async photo() {
      const img = await samplePhoto(file);
      return { note, next: () => img, mirror: false };
    },
    async clip() {
      const img = await samplePhoto(file);
      let t = 0;
      return {
        note: `a ${CLIP_FRAMES}-frame clip made from the photo (moving, turning, zooming)`,
        mirror: false,
        next: () => {
          const k = t++ % CLIP_FRAMES;
          return (clip[k] ??= clipFrame(img, k, CLIP_FRAMES, CLIP_SIZE));
        },
      };
    },
    camera: () => cameraSource(),
  };
}

// -- timings ------------------------------------------------------------------------------------------------------

const WINDOW = 60;
const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : NaN);
const fmt = (v) => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : "–");

/**
 * kind: "segmentation" or "hands"; photo: the sample's file and note; stages: {key: label} of the result's ms to
 * show; draw(ctx, img, result): put the finished frame on the canvas; describe(result): the side panel's text.
 * Returns the page's handle (window.visionPage, which the tests drive).
 */
export function startPage({ kind, photo: { file, note }, stages, draw, describe = () => {}, options = {} }) {
  const canvas = $("view");
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const backend = params.get("worker") === "0" ? onPage() : inWorker();
  const state = { source: null, sourceName: null, running: false, generation: 0, last: null };
  const series = { frame: [], stamps: [], roundTrip: [], draw: [], ...Object.fromEntries(Object.keys(stages).map((k) => [k, []])) };
  const push = (k, v) => { series[k].push(v); if (series[k].length > WINDOW) series[k].shift(); };
  const SOURCES = sources(file, note);

  const table = $("stats");
  const rows = { fps: "FPS", ...stages, roundTrip: backend.where === "worker" ? "worker round trip" : "pipeline, rest",
    draw: "draw", frame: "frame total" };
  for (const [k, label] of Object.entries(rows)) {
    const tr = table.insertRow();
    tr.innerHTML = `<th>${label}</th><td id="s-${k}">–</td>`;
  }

  function stats() {
    const s = series.stamps;
    const out = { fps: s.length > 1 ? (1000 * (s.length - 1)) / (s[s.length - 1] - s[0]) : NaN, frames: series.frame.length };
    for (const k of Object.keys(series)) if (k !== "stamps") out[k] = mean(series[k]);
    return out;
  }

  function showStats() {
    const s = stats();
    $("s-fps").textContent = Number.isFinite(s.fps) ? `${s.fps.toFixed(1)} (pipeline alone: ${(1000 / s.frame).toFixed(0)})` : "–";
    for (const k of Object.keys(rows)) if (k !== "fps") $(`s-${k}`).textContent = fmt(s[k]);
  }

  const framePixels = frameGrabber();

  async function processFrame(img, gen = state.generation) {
    const t0 = performance.now();
    const keep = backend.where === "worker" ? new ImageData(new Uint8ClampedArray(img.data), img.width, img.height) : img;
    const r = await backend.frame(img);
    const t1 = performance.now();
    if (gen !== state.generation) return r;
    if (canvas.width !== keep.width || canvas.height !== keep.height) {
      Object.assign(canvas, { width: keep.width, height: keep.height });
      canvas.style.maxWidth = `min(720px, ${(75 * keep.width) / keep.height}vh)`; // the whole frame on screen
    }
    draw(ctx, keep, r);
    describe(r);
    const t2 = performance.now();
    const inside = Object.keys(stages).reduce((a, k) => a + (r.ms[k] ?? 0), 0);
    for (const k of Object.keys(stages)) push(k, r.ms[k] ?? 0);
    push("roundTrip", t1 - t0 - inside);
    push("draw", t2 - t1);
    push("frame", t2 - t0);
    push("stamps", t2);
    state.last = r;
    return r;
  }

  async function loop(gen) {
    while (state.running && gen === state.generation) {
      await processFrame(framePixels(state.source.next()), gen);
      showStats();
      await new Promise((r) => requestAnimationFrame(r));
    }
  }

  // no camera: the clip instead; a new source starts the tracker and the statistics afresh
  const setSource = sourceSwitcher(state, SOURCES, { fallback: "clip", loop, async beforeRun(source) {
    canvas.classList.toggle("mirror", !!source.mirror);
    await backend.reset();
    for (const k of Object.keys(series)) series[k].length = 0;
  } });

  function stop() {
    state.running = false;
    state.generation++;
  }

  backend.onError(showError);

  async function start() {
    for (const b of document.querySelectorAll("#sources button")) {
      b.onclick = () => ready.then(() => setSource(b.dataset.source)).catch(showError);
    }
    bindVariantSelect();
    $("in-worker").checked = backend.where === "worker";
    $("in-worker").onchange = (e) => { params.set("worker", e.target.checked ? "1" : "0"); location.search = params.toString(); };
    const info = await backend.init(kind, { variant: params.get("variant") ?? "auto", ...options });
    $("engine-info").textContent = `engine: the ${describeVariant(info.variant)} build (${info.reason}), ` +
      (backend.where === "worker" ? "in a Worker" : "on the page's thread");
    await showReadyAndStart(setSource);
    return { ...info, where: backend.where };
  }

  const ready = start();
  ready.catch(showError);
  return {
    ready, stats, stop, setSource, configure: (s) => backend.configure(s), reset: () => backend.reset(),
    get last() { return state.last; },
    get source() { return state.sourceName; },
    view: () => ({ canvasWidth: canvas.width, canvasHeight: canvas.height, mirror: canvas.classList.contains("mirror") }),
    async process(pixels) { stop(); return processFrame(framePixels(pixels)); },
  };
}
