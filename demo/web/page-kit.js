// What the camera pages (try-on, background, hands, teach) share: element lookup, the page's query, the error
// display, calls to the page's Worker, the sample photos, the camera as a source, switching sources, starting the
// first one and reading a video frame's pixels. One place, so a fix to any of them reaches every page.
import { getPixels } from "../../js_bindings/src/image.js";

export const $ = (id) => document.getElementById(id);
export const params = new URLSearchParams(location.search);

/** Show an error in the page's #error box and mark #status as stopped. */
export function showError(e) {
  const el = $("error");
  el.hidden = false;
  el.textContent = String(e?.message ?? e);
  $("status").dataset.state = "error";
  $("status").textContent = "stopped by the error below";
}

/**
 * The page's Worker as calls: call(op, args, transfer, onProgress) -> Promise of the result. The worker answers
 * {id, ok, result | error}, and may send {id, progress} any number of times before (onProgress gets them).
 */
export function workerClient(url, onFailure = showError) {
  const worker = new Worker(url, { type: "module" });
  const pending = new Map();
  let nextId = 1;
  worker.onmessage = ({ data: { id, ok, result, error, progress } }) => {
    const p = pending.get(id);
    if (!p) return;
    if (progress !== undefined) { p.onProgress?.(progress); return; }
    pending.delete(id);
    if (ok) p.resolve(result); else p.reject(new Error(error));
  };
  worker.onerror = (e) => onFailure(new Error(`the worker failed: ${e.message}`));
  const call = (op, args, transfer = [], onProgress) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ id, op, args }, transfer);
  });
  return { worker, call };
}

const photoCache = new Map();
/** A sample photo of demo/web/samples as RGBA pixels (fetched and decoded once). */
export async function samplePhoto(file) {
  if (!photoCache.has(file)) {
    const res = await fetch(new URL(`./samples/${file}`, import.meta.url));
    if (!res.ok) throw new Error(`samples/${file} is missing: start the page with \`wasmrt demo\`, which copies it`);
    photoCache.set(file, await getPixels(await res.blob()));
  }
  return photoCache.get(file);
}

/** The camera into the page's <video id="video">, as a source: {note, mirror, stop, next, video}. */
export async function cameraSource(note = "your camera (shown mirrored); frames stay on this device") {
  if (!navigator.mediaDevices?.getUserMedia) throw new Error("no camera API here (it needs https or localhost)");
  const video = $("video");
  const stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "user", width: 640, height: 480 }, audio: false });
  video.srcObject = stream;
  await video.play();
  return { note, mirror: true, video, stop: () => stream.getTracks().forEach((tr) => tr.stop()), next: () => video };
}

/** framePixels(frame): a source's frame (a <video>, or RGBA pixels) as an ImageData of its own (a worker may take
 * its buffer); video frames are read through one hidden canvas. */
export function frameGrabber() {
  const grab = document.createElement("canvas");
  const grabCtx = grab.getContext("2d", { willReadFrequently: true });
  return function framePixels(frame) {
    if (frame instanceof HTMLVideoElement) {
      const w = frame.videoWidth, h = frame.videoHeight;
      if (grab.width !== w || grab.height !== h) Object.assign(grab, { width: w, height: h });
      grabCtx.drawImage(frame, 0, 0, w, h);
      return grabCtx.getImageData(0, 0, w, h);
    }
    return new ImageData(new Uint8ClampedArray(frame.data), frame.width, frame.height);
  };
}

/** The engine <select id="variant">: shows ?variant= and reloads the page with the new choice. */
export function bindVariantSelect() {
  $("variant").value = params.get("variant") ?? "auto";
  $("variant").onchange = (e) => { params.set("variant", e.target.value); location.search = params.toString(); };
}

/**
 * setSource(name) for a page whose state holds {source, sourceName, running, generation}: the old source stops,
 * the #sources button is marked, sources[name]() starts (a camera that fails hands over to `fallback`), its note
 * shows, the page resets what it keeps per source (beforeRun(source)), and loop(generation) runs until the next
 * switch.
 */
export function sourceSwitcher(state, sources, { fallback, loop, beforeRun = () => {} }) {
  return async function setSource(name) {
    state.generation++;
    state.source?.stop?.();
    for (const b of document.querySelectorAll("#sources button")) b.classList.toggle("active", b.dataset.source === name);
    try {
      state.source = await sources[name]();
    } catch (e) {
      $("source-note").textContent = `${name}: ${e.message}`;
      if (name === "camera") return setSource(fallback); // no camera: the page's still source instead
      throw e;
    }
    state.sourceName = name;
    $("source-note").textContent = state.source.note;
    await beforeRun(state.source);
    state.running = true;
    loop(state.generation).catch(showError);
  };
}

/** #status says ready, and the ?source= starts (the camera unless given; "none": no source). */
export async function showReadyAndStart(setSource) {
  $("status").dataset.state = "ready";
  $("status").textContent = "ready";
  const source = params.get("source") ?? "camera";
  if (source !== "none") await setSource(source);
}
