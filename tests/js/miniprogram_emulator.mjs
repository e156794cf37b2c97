// A faithful-as-documented emulation of the WeChat and Alipay mini-program hosts (docs/miniprograms.md) to run the real
// try-on page and worker of demo/miniprogram in Node:
//   - files: getFileSystemManager().readFile({filePath, encoding?, success, fail}) / readFileSync(path, encoding?)
//     return a fresh ArrayBuffer without encoding; code package paths only (plus USER_DATA_PATH); files of a
//     subpackage are readable once it is loaded (WeChat: wx.loadSubpackage; Alipay: preloadRule of the open page)
//   - Worker: createWorker(path) inside app.json's "workers" folder, one at a time; messages are copied (structured
//     clone across threads); in the Worker: worker.onMessage/postMessage and XXWebAssembly.instantiate(path) only
//   - camera: createCameraContext().onCameraFrame(cb) -> listener.start()/stop(); frames {width, height, data:
//     RGBA ArrayBuffer}, the buffer is reused (overwritten) after the callback returns
//   - canvas type="2d" through createSelectorQuery().select("#id").node().exec(cb); createOffscreenCanvas({width,
//     height}) with createImage() (src: a photo the album gave) and drawImage of that image at its own size
//   - the user's files (getFileSystemManager().writeFile / readFile under USER_DATA_PATH) and storage (WeChat:
//     setStorageSync(key, data) / getStorageSync(key), "" when absent; Alipay: setStorageSync({key, data}) /
//     getStorageSync({key}) -> {data}), kept in `store`: pass one store to a later MiniProgram to reopen the app
//   - the album: chooseMedia (WeChat: {tempFiles: [{tempFilePath}]}) / chooseImage (Alipay: {apFilePaths,
//     tempFilePaths}) give the photos queued with pickPhotos(), as temporary file paths
//   - setData({"a[1].b": v}) paths, as both hosts take them
import { existsSync, readFileSync } from "node:fs";
import { join, normalize } from "node:path";
import { Worker } from "node:worker_threads";

const PLATFORM = {
  wechat: { api: "wx", wasmName: "WXWebAssembly", subpackages: "subpackages", userData: "wxfile://usr" },
  alipay: { api: "my", wasmName: "MYWebAssembly", subpackages: "subPackages", userData: "https://usr" },
};

class Canvas2D {
  constructor(canvas) { this.canvas = canvas; }
  createImageData(w, h) { return { width: w, height: h, data: new Uint8ClampedArray(w * h * 4) }; }
  putImageData(img, x, y) {
    const c = this.canvas;
    for (let r = 0; r < img.height; r++) {
      const dy = y + r;
      if (dy < 0 || dy >= c.height) continue;
      c.pixels.set(img.data.subarray(r * img.width * 4, (r + 1) * img.width * 4), (dy * c.width + x) * 4);
    }
    c.puts++;
  }
  drawImage(img, x, y, w = img.width, h = img.height) {
    if (!(img instanceof EmulatedImage) || !img._pixels || x !== 0 || y !== 0 || w !== img.width || h !== img.height) {
      throw new Error("emulator: drawImage of a loaded createImage() image at (0, 0), its own size, only");
    }
    this.putImageData({ width: w, height: h, data: img._pixels }, 0, 0);
  }
  getImageData(x, y, w, h) {
    const img = this.createImageData(w, h), c = this.canvas;
    for (let r = 0; r < h; r++) img.data.set(c.pixels.subarray(((y + r) * c.width + x) * 4, ((y + r) * c.width + x + w) * 4), r * w * 4);
    return img;
  }
}

/** An image of createImage(): src is a temporary path of a photo the album gave (its RGBA pixels). */
class EmulatedImage {
  constructor(photos) { this._photos = photos; this.width = 0; this.height = 0; this.onload = null; this.onerror = null; }
  set src(path) {
    this._src = path;
    setTimeout(() => {
      const p = this._photos.get(path);
      if (!p) { this.onerror?.({ errMsg: `image: cannot load ${path}` }); return; }
      Object.assign(this, { width: p.width, height: p.height, _pixels: p.data });
      this.onload?.();
    }, 0);
  }
  get src() { return this._src; }
}

class CanvasNode {
  constructor(width = 300, height = 150) { this._w = width; this._h = height; this.puts = 0; this._alloc(); }
  _alloc() { this.pixels = new Uint8ClampedArray(this._w * this._h * 4); }
  get width() { return this._w; }
  set width(v) { this._w = v; this._alloc(); }
  get height() { return this._h; }
  set height(v) { this._h = v; this._alloc(); }
  getContext(kind) { if (kind !== "2d") throw new Error(`canvas: only "2d" here, not ${kind}`); return (this._ctx ??= new Canvas2D(this)); }
}

let pageOpens = 0;

export class MiniProgram {
  /**
   * platform: "wechat" | "alipay"; root: the built project (app.json); device: {simd, brotli, ios, instantiate:
   * "path" | "bytes", instantiateResult: "instance" | "object"}.
   */
  constructor({ platform, root, device = {}, store = { files: new Map(), storage: new Map() } }) {
    this.platform = platform;
    this.p = PLATFORM[platform];
    this.root = root;
    this.device = { simd: true, brotli: true, ios: false, instantiate: "path", instantiateResult: "instance", ...device };
    this.app = JSON.parse(readFileSync(join(root, "app.json"), "utf8"));
    this.subRoots = (this.app[this.p.subpackages] ?? []).map((s) => s.root);
    this.loaded = new Set();
    this.worker = null;
    this.canvases = { out: new CanvasNode() };
    this.cameraCallbacks = [];
    this.store = store;
    this.album = []; // photos the next chooseMedia / chooseImage gives
    this.photos = new Map(); // temporary path -> pixels
    this.nextTemp = 1;
    this.api = this._api();
  }

  _packageOf(rel) { return this.subRoots.find((r) => rel === r || rel.startsWith(r + "/")) ?? null; }

  _read(filePath, encoding) {
    const fail = (why) => { throw Object.assign(new Error(`readFile:fail ${why}, open ${filePath}`), { errMsg: `readFile:fail ${why}, open ${filePath}` }); };
    if (typeof filePath !== "string") fail("invalid filePath");
    if (filePath.startsWith(this.p.userData)) {
      const b = this.store.files.get(filePath);
      if (!b) fail("no such file or directory");
      return b.slice(0); // a fresh ArrayBuffer
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(filePath)) fail("permission denied");
    const rel = normalize(filePath.replace(/^\/+/, ""));
    if (rel.startsWith("..")) fail("permission denied");
    const sub = this._packageOf(rel);
    if (sub && !this.loaded.has(sub)) fail("no such file or directory"); // subpackage not downloaded yet
    const file = join(this.root, rel);
    if (!existsSync(file)) fail("no such file or directory");
    const buf = readFileSync(file);
    if (encoding) return buf.toString(encoding === "utf-8" ? "utf8" : encoding);
    return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength); // a fresh ArrayBuffer
  }

  _api() {
    const fsm = {
      readFile: ({ filePath, encoding, success, fail, complete }) => {
        setTimeout(() => {
          let res;
          try { res = { data: this._read(filePath, encoding), errMsg: "readFile:ok" }; } catch (e) { fail?.({ errMsg: e.errMsg }); complete?.(); return; }
          success?.(res); complete?.(res);
        }, 0);
      },
      readFileSync: (filePath, encoding) => this._read(filePath, encoding),
      writeFile: ({ filePath, data, success, fail, complete }) => {
        setTimeout(() => {
          if (typeof filePath !== "string" || !filePath.startsWith(this.p.userData + "/")) {
            const res = { errMsg: `writeFile:fail permission denied, open ${filePath}` };
            fail?.(res); complete?.(res); return;
          }
          if (!(data instanceof ArrayBuffer)) { fail?.({ errMsg: "writeFile:fail data must be an ArrayBuffer here" }); complete?.(); return; }
          this.store.files.set(filePath, data.slice(0));
          const res = { errMsg: "writeFile:ok" };
          success?.(res); complete?.(res);
        }, 0);
      },
    };
    const photoPaths = (n) => this.album.splice(0, n).map((p) => {
      const path = `${this.p.userData.split(":")[0]}://tmp/photo-${this.nextTemp++}.png`;
      this.photos.set(path, p);
      return path;
    });
    const later = (fn) => setTimeout(fn, 0);
    const api = {
      env: { USER_DATA_PATH: this.p.userData },
      getFileSystemManager: () => fsm,
      createWorker: (scriptPath) => this._createWorker(scriptPath),
      createOffscreenCanvas: ({ width = 300, height = 150 } = {}) => {
        const c = new CanvasNode(width, height);
        c.createImage = () => new EmulatedImage(this.photos);
        return c;
      },
      createCameraContext: () => ({
        onCameraFrame: (cb) => {
          const entry = { cb, on: false };
          this.cameraCallbacks.push(entry);
          return { start: (o) => { entry.on = true; o?.success?.(); }, stop: (o) => { entry.on = false; o?.success?.(); } };
        },
      }),
      createSelectorQuery: () => {
        const q = [];
        const chain = {
          select: (sel) => ({ node: () => { q.push(sel); return chain; }, fields: () => { q.push(sel); return chain; } }),
          exec: (cb) => setTimeout(() => cb(q.map((sel) => ({ node: this.canvases[sel.replace(/^#/, "")] ?? null }))), 0),
        };
        return chain;
      },
    };
    if (this.platform === "wechat") {
      api.setStorageSync = (key, data) => { this.store.storage.set(key, structuredClone(data)); };
      api.getStorageSync = (key) => (this.store.storage.has(key) ? structuredClone(this.store.storage.get(key)) : "");
      api.chooseMedia = ({ count = 9, success, fail }) => later(() => {
        const paths = photoPaths(count);
        if (!paths.length) return fail?.({ errMsg: "chooseMedia:fail cancel" });
        success?.({ type: "image", tempFiles: paths.map((tempFilePath) => ({ tempFilePath, fileType: "image" })) });
      });
    } else {
      api.setStorageSync = ({ key, data }) => { this.store.storage.set(key, structuredClone(data)); };
      api.getStorageSync = ({ key }) => ({ data: this.store.storage.has(key) ? structuredClone(this.store.storage.get(key)) : null });
      api.chooseImage = ({ count = 9, success, fail }) => later(() => {
        const paths = photoPaths(count);
        if (!paths.length) return fail?.({ error: 11, errorMessage: "user cancelled" });
        success?.({ apFilePaths: paths, tempFilePaths: paths });
      });
    }
    if (this.platform === "wechat") {
      api.loadSubpackage = ({ name, success, fail, complete }) => {
        setTimeout(() => {
          if (!this.subRoots.includes(name)) { fail?.({ errMsg: `loadSubpackage:fail subpackage ${name} not found` }); complete?.(); return; }
          this.loaded.add(name);
          success?.({ errMsg: "loadSubpackage:ok" }); complete?.();
        }, 0);
        return { onProgressUpdate() {} };
      };
    }
    return api;
  }

  _createWorker(scriptPath) {
    if (this.worker) throw new Error("createWorker:fail exceed max concurrent workers limit 1");
    const dir = this.app.workers;
    const rel = normalize(String(scriptPath).replace(/^\/+/, ""));
    if (!dir || !rel.startsWith(dir + "/")) throw new Error(`createWorker:fail ${scriptPath} is not in the workers folder (${dir})`);
    if (!existsSync(join(this.root, rel))) throw new Error(`createWorker:fail ${scriptPath} not found`);
    const w = new Worker(new URL("./miniprogram_worker_host.mjs", import.meta.url), {
      workerData: { root: this.root, entry: rel, workerDir: dir, wasmName: this.p.wasmName, device: this.device },
    });
    const listeners = [];
    w.on("message", (m) => { for (const fn of listeners) fn(m); });
    w.on("error", (e) => { this.workerError = e; });
    this.worker = w;
    return {
      postMessage: (m) => w.postMessage(m),
      onMessage: (fn) => listeners.push(fn),
      terminate: () => { w.terminate(); this.worker = null; },
    };
  }

  /** Open a page: its module calls Page(options); returns the page instance after onLoad and onReady. */
  async open(pagePath) {
    const g = globalThis;
    let options = null;
    g.Page = (o) => { options = o; };
    g[this.p.api] = this.api;
    if (this.platform === "alipay") { // preloadRule downloads these subpackages when the page opens
      for (const name of this.app.preloadRule?.[pagePath]?.packages ?? []) this.loaded.add(name);
    }
    // a page opened again (the mini-program reopened) runs its module again, as a fresh start of the app would
    await import(`${new URL(`file://${join(this.root, pagePath)}.js`).href}?open=${++pageOpens}`);
    if (!options) throw new Error(`${pagePath}.js did not call Page()`);
    const page = Object.create(options);
    page.data = structuredClone(options.data ?? {});
    page.setData = (patch, cb) => {
      for (const [path, value] of Object.entries(structuredClone(patch))) {
        const keys = path.replace(/\[(\d+)\]/g, ".$1").split(".");
        let o = page.data;
        for (const k of keys.slice(0, -1)) o = o[k] ??= {};
        o[keys[keys.length - 1]] = value;
      }
      cb?.();
    };
    page.route = pagePath;
    page.onLoad?.({});
    page.onReady?.();
    return page;
  }

  /** Queue photos ({width, height, data: RGBA}) for the next album pick. */
  pickPhotos(photos) { this.album.push(...photos); }

  /** Deliver one camera frame (RGBA bytes) to the listeners; the buffer is reused afterwards, as on devices. */
  cameraFrame(rgba, width, height) {
    const data = new ArrayBuffer(width * height * 4);
    new Uint8Array(data).set(rgba.subarray(0, width * height * 4));
    for (const { cb, on } of this.cameraCallbacks) if (on) cb({ width, height, data });
    new Uint8Array(data).fill(0x5a); // the native side writes the next frame into the same buffer
  }

  close() { this.worker?.terminate(); this.worker = null; }
}

/** Every file a module graph loads (relative imports only), from an entry file. */
export function moduleGraph(entry) {
  const seen = new Set(), out = [];
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const src = readFileSync(file, "utf8");
    const deps = [...src.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|(?:^|\n)\s*import\s+"([^"]+)"/g)].map((m) => m[1] ?? m[2]);
    out.push({ file, src, deps });
    for (const d of deps) if (d.startsWith(".")) visit(join(file, "..", d));
  };
  visit(entry);
  return out;
}
