// The try-on page of the mini-programs (copied into lib/ by build.mjs), shared by WeChat (api = wx) and Alipay
// (api = my): camera frames go to the Worker; when a frame's landmarks come back, its lips are recoloured in that
// frame's own pixels, which are then put on the type="2d" canvas in one step, so every frame shown carries its
// lipstick (the raw camera is only a small preview). One frame is in flight at a time; frames arriving meanwhile
// are dropped. With gestures (the gesture try-on page), the Worker tracks a hand too and an open palm, shown after
// a frame without one, puts on the next colour (GESTURE_ACTIONS).
import { recolorLips } from "./lips.js";
import { MODELS } from "./models.js";
import { readFile, readSplitModel, wasmBytes } from "./models-io.js";
import { openCamera, openWorker, workerPageLifecycle } from "./worker-page.js";

export const COLORS = ["#c2185b", "#d32f2f", "#ad1457", "#8e24aa", "#e57373", "#6d4c41"];
/** What each gesture does on the gesture try-on page (wasmrt.vision's gesture names). */
export const GESTURE_ACTIONS = Object.freeze({ open_palm: "next colour" });
const now = () => Date.now();

async function readModels(api, platform, gestures) {
  const fs = api.getFileSystemManager();
  const detector = await readFile(fs, MODELS.detector);
  const landmark = await readSplitModel(api, MODELS.landmark);
  const hands = gestures ? { palm: await readSplitModel(api, MODELS.palm), hand: await readSplitModel(api, MODELS.hand) } : {};
  return { detector, landmark, ...hands, ...(await wasmBytes(api, platform)) };
}

const avg = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0);

export function createTryonPage(api, { platform, gestures = false }) {
  return {
    data: { status: "loading models…", variant: "", colors: COLORS, color: COLORS[0], intensity: 60, fps: "–", stages: "",
      refine: false, points: 468, gesture: "–", actions: Object.entries(GESTURE_ACTIONS).map(([g, a]) => `${g.replace("_", " ")}: ${a}`).join(" · ") },

    onLoad() {
      this.busy = false;
      this.frameId = 0;
      this.history = []; // {t, ms, paint, ranDetector}
      this.results = 0;
    },

    ...workerPageLifecycle,

    async start() {
      const models = await readModels(api, platform, gestures);
      const info = await openWorker(this, api, models);
      this.setData({ status: "ready", variant: `${info.variant} (${info.reason})` });
      await openCamera(this, api);
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
      if (gestures) this.onHands(msg.hands);
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
          (gestures ? `hand ${avg(h.map((x) => (x.ms.palm ?? 0) + (x.ms.handWarp ?? 0) + (x.ms.hand ?? 0))).toFixed(1)} ms · ` : "") +
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
        const landmark = await readSplitModel(api, refine ? MODELS.attention : MODELS.landmark);
        const done = new Promise((resolve, reject) => { this.switched = { resolve, reject }; });
        this.worker.postMessage({ type: "landmarks", refine, landmark });
        const msg = await done.finally(() => { this.switched = null; });
        if (msg.refine === this.data.refine) this.setData({ status: "ready", points: msg.points });
      }).catch((err) => this.setData({ refine: !refine, status: `error: ${err.message}` })); // the old model stays
      return this.switching;
    },

    /** A gesture acts once when it appears (not on every frame it is held). */
    onHands(hands) {
      const seen = hands.map((h) => h.gesture).find((g) => g in GESTURE_ACTIONS) ?? null;
      if (seen && seen !== this.lastGesture) { // open_palm, the one action so far
        const next = COLORS[(COLORS.indexOf(this.data.color) + 1) % COLORS.length];
        this.setData({ color: next });
      }
      this.lastGesture = seen;
      this.setData({ gesture: hands.length ? (hands[0].gesture ?? "hand, no gesture").replace("_", " ") : "no hand" });
    },

    onColorTap(e) { this.setData({ color: e.currentTarget.dataset.color }); },
    onIntensityChange(e) { this.setData({ intensity: e.detail.value }); },
    onCameraError(e) { this.setData({ status: `camera: ${e.detail?.errMsg ?? "not available"}` }); },
    platform,
  };
}
