// Reading the models and wasm modules of a mini-program page (copied into lib/ by build.mjs), shared by WeChat
// (api = wx) and Alipay (api = my): package files through the file system manager, models split over subpackages
// (2 MB per package) joined again.
import { MODELS } from "./models.js";

export function readFile(fs, filePath) {
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

/** A model of MODELS split across subpackages (MODELS.landmark, .attention, .palm, .hand, .selfie): load them,
 * read and join its parts; an ArrayBuffer. */
export async function readSplitModel(api, model) {
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

/** {wasmBytes} for Alipay builds whose instantiate only takes bytes; {} elsewhere. */
export async function wasmBytes(api, platform) {
  if (platform !== "alipay" || MODELS.brotli) return {};
  const fs = api.getFileSystemManager(), out = {};
  for (const v of ["simd", "scalar"]) {
    const path = `${MODELS.wasmDir}/wasmrt-${v}.wasm`;
    out[path] = await readFile(fs, path);
  }
  return { wasmBytes: out };
}
