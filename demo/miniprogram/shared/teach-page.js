// The teach-the-camera page of the mini-programs (copied into lib/ by build.mjs), shared by WeChat (api = wx) and
// Alipay (api = my): the same flow as the web page (demo/web/teach.html). A person names 2-5 classes and adds photos
// to each: a snapshot (the next camera frame) or photos from the album (chooseMedia / chooseImage, decoded on an
// offscreen canvas); train runs in the Worker (teach-core.js: EfficientNet-Lite0's features, a new head); then each
// camera frame is classified, shown on the canvas with a banner in the class's colour, the class named under it.
// Save writes the tuned .wrt to the user data folder (file system manager) and its class names to storage; reload
// reads them back, also after the mini-program was closed.
import { MODELS } from "./models.js";
import { readFile, readSplitModel, wasmBytes } from "./models-io.js";
import { openCamera, openWorker, workerPageLifecycle } from "./worker-page.js";
import { BANNER, CLASS_COLORS, TEACH } from "./teach-core.js";

const STORAGE_KEY = "wasmrt-teach";
const NAMES = ["first", "second", "third", "fourth", "fifth"];

const classEntry = (k, name = NAMES[k]) => ({ name, count: 0, color: CLASS_COLORS[k] });

/** Paint the bottom BANNER of an RGBA frame in a colour (#rrggbb), in place. */
export function paintBanner(img, color) {
  const rgb = [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16));
  const top = img.height - Math.round(BANNER * img.height);
  for (let y = top; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) img.data.set(rgb, 4 * (y * img.width + x));
  }
}

function callback(api, name, options) {
  return new Promise((resolve, reject) => api[name]({
    ...options, success: resolve, fail: (e) => reject(new Error(`${name}: ${e?.errMsg ?? e?.errorMessage ?? JSON.stringify(e)}`)),
  }));
}

export function createTeachPage(api, { platform }) {
  return {
    data: { status: "loading the feature model…", variant: "", classes: [0, 1, 2].map((k) => classEntry(k)), trained: false,
      progress: 0, trainInfo: "", prediction: "", predictionColor: "", storeInfo: "" },

    onLoad() {
      this.requests = new Map();
      this.nextId = 1;
      this.samples = [[], [], []]; // per class: sample ids in the Worker
      this.snapTo = [];            // classes waiting for the next camera frame
      this.busy = false;
      this.results = 0;
    },

    ...workerPageLifecycle,

    async start() {
      const features = await readSplitModel(api, MODELS.features);
      const extra = await wasmBytes(api, platform);
      const info = await openWorker(this, api, { features, ...extra });
      const saved = this.savedRecord();
      this.setData({ status: "ready", variant: `${info.variant} (${info.reason})`,
        storeInfo: saved ? `a model saved ${saved.savedAt} (${saved.classes.join(", ")}): reload puts it back` : "" });
      await openCamera(this, api);
    },

    /** One request to the Worker's teacher; onProgress gets its progress messages. */
    request(op, args, onProgress) {
      const id = this.nextId++;
      return new Promise((resolve, reject) => {
        this.requests.set(id, { resolve, reject, onProgress });
        this.worker.postMessage({ type: "teach", id, op, args });
      });
    },

    onWorkerMessage(msg) {
      if (msg.type === "ready") return this.onReadyMsg(msg);
      if (msg.type === "error") {
        if (this.onInitError && !this.ctx) this.onInitError(new Error(msg.message));
        return this.setData({ status: `error: ${msg.message}` });
      }
      const r = this.requests.get(msg.id);
      if (!r) return;
      if (msg.type === "teachProgress") return r.onProgress?.(msg.progress);
      this.requests.delete(msg.id);
      if (msg.ok) r.resolve(msg.result); else r.reject(new Error(msg.error));
    },

    /** Camera frames: a snapshot when one is asked for; the frame on the canvas, classified once trained. */
    onCameraFrame(frame) {
      if (!this.ctx) return;
      const { width, height } = frame;
      const data = frame.data.slice(0); // the camera reuses its buffer after we return
      for (const k of this.snapTo.splice(0)) this.addSample(k, { width, height, data: data.slice(0) }).catch((e) => this.fail(e));
      if (this.busy) return; // one frame in flight
      if (!this.data.trained) return this.show({ width, height, data }, null);
      this.busy = true;
      this.request("classify", { width, height, data: data.slice(0) })
        .then((p) => this.show({ width, height, data }, p))
        .catch((e) => this.fail(e))
        .finally(() => { this.busy = false; });
    },

    show({ width, height, data }, p) {
      if (this.canvas.width !== width || this.canvas.height !== height) Object.assign(this.canvas, { width, height });
      const img = this.ctx.createImageData(width, height);
      img.data.set(new Uint8Array(data));
      if (p) paintBanner(img, CLASS_COLORS[p.index]);
      this.ctx.putImageData(img, 0, 0);
      this.results++;
      if (!p) return;
      this.lastResult = p;
      this.setData({ prediction: `${p.label} ${(100 * p.confidence).toFixed(1)}%`, predictionColor: CLASS_COLORS[p.index] });
    },

    fail(e) { this.setData({ status: `error: ${e.message}` }); },

    async addSample(k, pixels) {
      const id = await this.request("add", pixels);
      this.samples[k].push(id);
      this.setData({ [`classes[${k}].count`]: this.samples[k].length });
      return id;
    },

    onNameInput(e) { this.setData({ [`classes[${e.currentTarget.dataset.index}].name`]: e.detail.value }); },

    setClassCount(n) {
      n = Math.max(TEACH.minClasses, Math.min(TEACH.maxClasses, n));
      while (this.samples.length > n) for (const id of this.samples.pop()) this.request("remove", { id });
      while (this.samples.length < n) this.samples.push([]);
      const classes = this.samples.map((s, k) => ({ ...(this.data.classes[k] ?? classEntry(k)), count: s.length }));
      this.setData({ classes });
    },
    onAddClassTap() { this.setClassCount(this.samples.length + 1); },
    onRemoveClassTap() { this.setClassCount(this.samples.length - 1); },

    /** The next camera frame becomes a photo of the class. */
    onSnapshotTap(e) { this.snapTo.push(Number(e.currentTarget.dataset.index)); },

    /** Photos from the album into the class. */
    async onAlbumTap(e) {
      const k = Number(e.currentTarget.dataset.index);
      try {
        const paths = platform === "wechat"
          ? (await callback(api, "chooseMedia", { count: 9, mediaType: ["image"], sourceType: ["album"] })).tempFiles.map((f) => f.tempFilePath)
          : (({ tempFilePaths, apFilePaths }) => tempFilePaths ?? apFilePaths)(await callback(api, "chooseImage", { count: 9, sourceType: ["album"] }));
        for (const p of paths) await this.addSample(k, await this.decode(p));
      } catch (err) {
        this.fail(err);
      }
    },

    /** A photo file as RGBA pixels, through an offscreen canvas. */
    async decode(path) {
      const probe = api.createOffscreenCanvas({ type: "2d", width: 1, height: 1 });
      const image = probe.createImage();
      await new Promise((resolve, reject) => {
        image.onload = resolve;
        image.onerror = () => reject(new Error(`cannot decode ${path}`));
        image.src = path;
      });
      const { width, height } = image;
      const canvas = api.createOffscreenCanvas({ type: "2d", width, height });
      const ctx = canvas.getContext("2d");
      ctx.drawImage(image, 0, 0, width, height);
      const img = ctx.getImageData(0, 0, width, height);
      return { width, height, data: new Uint8Array(img.data).buffer };
    },

    async onTrainTap() {
      const classes = this.data.classes.map((c) => c.name);
      const samples = this.samples.flatMap((ids, label) => ids.map((id) => ({ id, label })));
      this.setData({ status: `training on ${samples.length} photos…`, progress: 0 });
      try {
        const r = await this.request("train", { classes, samples }, ({ epoch, epochs, loss }) => this.setData({
          progress: Math.round((100 * epoch) / epochs), trainInfo: `epoch ${epoch} of ${epochs} · loss ${loss.toFixed(4)}`,
        }));
        this.setData({ trained: true, progress: 100, status: `trained: ${r.classes.length} classes, ${samples.length} photos`,
          trainInfo: `${r.losses.length} epochs in ${(r.ms / 1000).toFixed(2)} s · loss ${r.losses[0].toFixed(3)} → ` +
            `${r.losses[r.losses.length - 1].toFixed(4)}` });
      } catch (e) {
        this.fail(e);
      }
    },

    modelPath() { return `${api.env.USER_DATA_PATH}/teach-model.wrt`; },
    /** The saved model's record {classes, bytes, savedAt} from storage (WeChat: the value; Alipay: {data}), or null. */
    savedRecord() {
      try {
        const r = platform === "alipay" ? api.getStorageSync({ key: STORAGE_KEY })?.data : api.getStorageSync(STORAGE_KEY);
        return r?.classes ? r : null;
      } catch {
        return null;
      }
    },

    async onSaveTap() {
      try {
        const bytes = await this.request("export");
        await callback(api.getFileSystemManager(), "writeFile", { filePath: this.modelPath(), data: bytes });
        const record = { classes: this.data.classes.map((c) => c.name), bytes: bytes.byteLength, savedAt: new Date().toISOString() };
        if (platform === "alipay") api.setStorageSync({ key: STORAGE_KEY, data: record });
        else api.setStorageSync(STORAGE_KEY, record);
        this.setData({ storeInfo: `saved on this device: ${record.classes.join(", ")} (${(record.bytes / 1e6).toFixed(1)} MB)` });
      } catch (e) {
        this.fail(e);
      }
    },

    async onReloadTap() {
      try {
        const record = this.savedRecord();
        if (!record) throw new Error("no saved model on this device yet: train, then save");
        const bytes = await readFile(api.getFileSystemManager(), this.modelPath());
        if (bytes.byteLength !== record.bytes) throw new Error(`the saved model has ${bytes.byteLength} bytes, expected ${record.bytes}`);
        const { labels } = await this.request("use", { bytes });
        this.samples = labels.map(() => []);
        this.setData({ classes: labels.map((name, k) => classEntry(k, name)), trained: true,
          status: `trained: the saved model (${labels.join(", ")})`, storeInfo: `reloaded the model saved ${record.savedAt}` });
      } catch (e) {
        this.fail(e);
      }
    },

    onCameraError(e) { this.setData({ status: `camera: ${e.detail?.errMsg ?? "not available"}` }); },
    platform,
  };
}
