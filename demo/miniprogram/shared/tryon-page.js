// The try-on page of the mini-programs (copied into lib/ by build.mjs), shared by WeChat (api = wx) and Alipay
// (api = my): camera frames go to the Worker; when a frame's landmarks come back, its lips are recoloured in that
// frame's own pixels, which are then put on the type="2d" canvas in one step, so every frame shown carries its
// lipstick (the raw camera is only a small preview). One frame is in flight at a time; frames arriving meanwhile
// are dropped.
import { recolorLips } from "./lips.js";
import { MODELS } from "./models.js";

const COLORS = ["#c2185b", "#d32f2f", "#ad1457", "#8e24aa", "#e57373", "#6d4c41"];
const WORKER = "workers/facemesh/index.js";
const now = () => Date.now();

function readFile(fs, filePath) {
  return new Promise((resolve, reject) => fs.readFile({
    filePath,
    success: (res) => resolve(res.data),
    fail: (e) => reject(new Error(`cannot read ${filePath}: ${e?.errMsg ?? e?.errorMessage ?? JSON.stringify(e)}`)),
  }));
}

function loadSubpackage(api, name) {
  if (typeof api.loadSubpackage !== "function") return Promise.resolve(); // preloaded by app.json's preloadRule
  return new Promise((resolve, reject) => api.loadSubpackage({
    name, success: () => resolve(), fail: (e) => reject(new Error(`cannot load subpackage ${name}: ${e?.errMsg ?? e}`)),
  }));
}

/** A landmark model (MODELS.landmark, or MODELS.attention for refined lips and irises) is split across
 * subpackages (2 MB per package): load them, read and join its parts. */
async function readLandmarkModel(api, model) {
  const fs = api.getFileSystemManager();
  for (const name of model.subpackages) await loadSubpackage(api, name);
  const parts = [];
  for (const p of model.parts) parts.push(new Uint8Array(await readFile(fs, p)));
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) { bytes.set(p, off); off += p.length; }
  if (bytes.length !== model.bytes) throw new Error(`${model.file}: ${bytes.length} bytes, expected ${model.bytes}`);
  return bytes.buffer;
}

async function readModels(api, platform) {
  const fs = api.getFileSystemManager();
  const detector = await readFile(fs, MODELS.detector);
  const landmark = await readLandmarkModel(api, MODELS.landmark);
  const out = { detector, landmark };
  if (platform === "alipay" && !MODELS.brotli) { // for Alipay builds whose instantiate only takes bytes
    out.wasmBytes = {};
    for (const v of ["simd", "scalar"]) {
      const path = `${MODELS.wasmDir}/wasmrt-${v}.wasm`;
      out.wasmBytes[path] = await readFile(fs, path);
    }
  }
  return out;
}

const avg = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0);

export function createTryonPage(api, { platform }) {
  return {
    data: { status: "loading models…", variant: "", colors: COLORS, color: COLORS[0], intensity: 60, fps: "–", stages: "",
      refine: false, points: 468 },

    onLoad() {
      this.busy = false;
      this.frameId = 0;
      this.history = []; // {t, ms, paint, ranDetector}
      this.results = 0;
    },

    onReady() {
      this.ready = this.start().catch((e) => this.setData({ status: `error: ${e.message}` }));
    },

    onUnload() {
      this.listener?.stop?.();
      this.worker?.terminate();
    },

    async start() {
      const models = await readModels(api, platform);
      this.worker = api.createWorker(WORKER);
      this.worker.onMessage((msg) => this.onWorkerMessage(msg));
      const ready = new Promise((resolve, reject) => { this.onReadyMsg = resolve; this.onInitError = reject; });
      this.worker.postMessage({ type: "init", wasmDir: MODELS.wasmDir, brotli: MODELS.brotli, ...models });
      const info = await ready;
      this.setData({ status: "ready", variant: `${info.variant} (${info.reason})` });
      this.canvas = await new Promise((resolve) => api.createSelectorQuery().select("#out").node().exec((res) => resolve(res[0].node)));
      this.ctx = this.canvas.getContext("2d");
      this.listener = api.createCameraContext().onCameraFrame((frame) => this.onCameraFrame(frame));
      this.listener.start();
    },

    onCameraFrame(frame) {
      if (this.busy || !this.ctx) return; // one frame in flight; the camera buffer is reused after we return
      this.busy = true;
      const id = ++this.frameId;
      this.pending = { id, width: frame.width, height: frame.height, pixels: frame.data.slice(0), t0: now() };
      this.worker.postMessage({ type: "frame", id, width: frame.width, height: frame.height, data: this.pending.pixels });
    },

    onWorkerMessage(msg) {
      if (msg.type === "ready") return this.onReadyMsg(msg);
      if (msg.type === "landmarks") return this.switched?.resolve(msg);
      if (msg.type === "error") {
        if (msg.id === undefined && this.switched) return this.switched.reject(new Error(msg.message)); // a switch
        this.busy = false;
        if (this.onInitError && !this.ctx) this.onInitError(new Error(msg.message));
        return this.setData({ status: `error: ${msg.message}` });
      }
      if (msg.type !== "result" || msg.id !== this.pending?.id) return;
      const { width, height, pixels, t0 } = this.pending;
      const t1 = now();
      const image = { data: new Uint8ClampedArray(pixels), width, height };
      for (const face of msg.faces) recolorLips(image, face, { color: this.data.color, intensity: this.data.intensity / 100 });
      if (this.canvas.width !== width || this.canvas.height !== height) Object.assign(this.canvas, { width, height });
      const out = this.ctx.createImageData(width, height);
      out.data.set(image.data);
      this.ctx.putImageData(out, 0, 0);
      const t2 = now();
      this.lastResult = msg;
      this.results++;
      this.history.push({ t: t2, total: t2 - t0, paint: t2 - t1, ms: msg.ms, ranDetector: msg.ranDetector });
      if (this.history.length > 30) this.history.shift();
      this.busy = false;
      this.showStats();
    },

    showStats() {
      const h = this.history;
      const fps = h.length > 1 ? (1000 * (h.length - 1)) / Math.max(1, h[h.length - 1].t - h[0].t) : 0;
      const det = h.filter((x) => x.ranDetector).map((x) => (x.ms.detector ?? 0) + (x.ms.detectorPre ?? 0));
      this.setData({
        fps: fps.toFixed(1),
        stages: `landmarks ${avg(h.map((x) => x.ms.landmarks ?? 0)).toFixed(1)} ms · warp ${avg(h.map((x) => x.ms.warp ?? 0)).toFixed(1)} ms · ` +
          `detector ${det.length ? avg(det).toFixed(1) + " ms" : "–"} (${h.filter((x) => x.ranDetector).length}/${h.length} frames) · ` +
          `paint ${avg(h.map((x) => x.paint)).toFixed(1)} ms · frame ${avg(h.map((x) => x.total)).toFixed(1)} ms`,
      });
    },

    /** The "refined lips and irises" switch: the attention mesh (478 points; its subpackages load on first use) or
     * the plain mesh replaces the worker's landmark model; frames keep flowing meanwhile. */
    onRefineChange(e) {
      const refine = !!e.detail.value;
      this.setData({ refine, status: refine ? "loading the attention mesh…" : "loading the face mesh…" });
      this.switching = (this.switching ?? Promise.resolve()).then(async () => {
        await this.ready;
        const landmark = await readLandmarkModel(api, refine ? MODELS.attention : MODELS.landmark);
        const done = new Promise((resolve, reject) => { this.switched = { resolve, reject }; });
        this.worker.postMessage({ type: "landmarks", refine, landmark });
        const msg = await done.finally(() => { this.switched = null; });
        if (msg.refine === this.data.refine) this.setData({ status: "ready", points: msg.points });
      }).catch((err) => this.setData({ refine: !refine, status: `error: ${err.message}` })); // the old model stays
      return this.switching;
    },

    onColorTap(e) { this.setData({ color: e.currentTarget.dataset.color }); },
    onIntensityChange(e) { this.setData({ intensity: e.detail.value }); },
    onCameraError(e) { this.setData({ status: `camera: ${e.detail?.errMsg ?? "not available"}` }); },
    platform,
  };
}
