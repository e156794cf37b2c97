// The background replacement page of the mini-programs (copied into lib/ by build.mjs), shared by WeChat (api = wx)
// and Alipay (api = my): camera frames go to the Worker, which runs MediaPipe's selfie segmentation and composites
// the frame over the chosen background (a colour, or the frame blurred); the page puts the result on the type="2d"
// canvas. One frame is in flight at a time; frames arriving meanwhile are dropped.
import { MODELS } from "./models.js";
import { readSplitModel, wasmBytes } from "./models-io.js";
import { openCamera, openWorker, workerPageLifecycle } from "./worker-page.js";

export const BACKGROUNDS = ["#00b140", "#1e88e5", "#fafafa", "#212121"];
const now = () => Date.now();
const avg = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0);

export function createSegmentPage(api, { platform }) {
  return {
    data: { status: "loading models…", variant: "", colors: BACKGROUNDS, color: BACKGROUNDS[0], blur: false, fps: "–",
      stages: "", person: "–" },

    onLoad() {
      this.busy = false;
      this.frameId = 0;
      this.history = [];
      this.results = 0;
    },

    ...workerPageLifecycle,

    async start() {
      const selfie = await readSplitModel(api, MODELS.selfie);
      const extra = await wasmBytes(api, platform);
      const info = await openWorker(this, api, { selfie, ...extra });
      this.setData({ status: "ready", variant: `${info.variant} (${info.reason})` });
      await openCamera(this, api);
    },

    onCameraFrame(frame) {
      if (this.busy || !this.ctx) return; // one frame in flight; the camera buffer is reused after we return
      this.busy = true;
      const id = ++this.frameId;
      this.pending = { id, t0: now() };
      const background = this.data.blur ? { mode: "blur", radius: 8 } : { mode: "color", color: this.data.color };
      this.worker.postMessage({ type: "segment", id, width: frame.width, height: frame.height, data: frame.data.slice(0), background });
    },

    onWorkerMessage(msg) {
      if (msg.type === "ready") return this.onReadyMsg(msg);
      if (msg.type === "error") {
        this.busy = false;
        if (this.onInitError && !this.ctx) this.onInitError(new Error(msg.message));
        return this.setData({ status: `error: ${msg.message}` });
      }
      if (msg.type !== "segmented" || msg.id !== this.pending?.id) return;
      const t1 = now();
      const { width, height } = msg;
      if (this.canvas.width !== width || this.canvas.height !== height) Object.assign(this.canvas, { width, height });
      const out = this.ctx.createImageData(width, height);
      out.data.set(new Uint8Array(msg.data));
      this.ctx.putImageData(out, 0, 0);
      const t2 = now();
      this.lastResult = msg;
      this.results++;
      this.history.push({ t: t2, total: t2 - this.pending.t0, draw: t2 - t1, ms: msg.ms });
      if (this.history.length > 30) this.history.shift();
      this.busy = false;
      const h = this.history;
      const fps = h.length > 1 ? (1000 * (h.length - 1)) / Math.max(1, h[h.length - 1].t - h[0].t) : 0;
      this.setData({
        fps: fps.toFixed(1), person: `${(100 * msg.personShare).toFixed(0)}%`,
        stages: `model ${avg(h.map((x) => x.ms.model ?? 0)).toFixed(1)} ms · mask and composite ${avg(h.map((x) => x.ms.post ?? 0)).toFixed(1)} ms · ` +
          `draw ${avg(h.map((x) => x.draw)).toFixed(1)} ms · ` +
          `frame ${avg(h.map((x) => x.total)).toFixed(1)} ms`,
      });
    },

    onColorTap(e) { this.setData({ color: e.currentTarget.dataset.color, blur: false }); },
    onBlurChange(e) { this.setData({ blur: !!e.detail.value }); },
    onCameraError(e) { this.setData({ status: `camera: ${e.detail?.errMsg ?? "not available"}` }); },
    platform,
  };
}
