// @ts-check
// init({backend: "auto"}) where WebGPU works: both runtimes are kept, and each model is loaded on both, run a few
// times on zeros of its inputs' shapes, and kept on the faster one (the other copy is released). WebGPU is slower
// than the CPU on small models (per-dispatch and read-back costs; a software adapter such as SwiftShader always),
// so which is faster is a property of the model and the device, not of the backend: it is measured.
// The choice is remembered per runtime and, where the host has localStorage, across page loads, keyed by the
// file's digest, the adapter and the wasm variant.

import { InputError } from "./errors.js";
import { Tensor, arrayTypeOf, sizeOf } from "./tensor.js";
import { TRIAL } from "./trial.js";

export { TRIAL }; // the trial's constants, shared with Python's engine="auto" (generated from wasmrt/engines/trial.py)

const now = () => (globalThis.performance?.now ? globalThis.performance.now() : Date.now());
const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Zeros of each input's shape and dtype (token ids of 0 are valid ids). @param {any} model */
function trialFeeds(model) {
  /** @type {Record<string, Tensor>} */
  const feeds = {};
  for (const t of model.inputs) {
    const T = t.dtype === "float16" ? Uint16Array : arrayTypeOf(t.dtype);
    feeds[t.name] = new Tensor(t.dtype, new T(sizeOf(t.shape)), [...t.shape]);
  }
  return feeds;
}

/** A short hex key of the file: SHA-256 where the host has WebCrypto, else FNV-1a over the bytes.
 * @param {Uint8Array} bytes */
async function digest(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (subtle) {
    const own = /** @type {Uint8Array<ArrayBuffer>} */ (bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice());
    const h = new Uint8Array(await subtle.digest("SHA-256", own));
    return Array.from(h.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return `fnv${(h >>> 0).toString(16)}-${bytes.length}`;
}

/** @param {string} key @returns {any} */
function stored(key) {
  try { return JSON.parse(globalThis.localStorage?.getItem(key) ?? "null"); } catch { return null; }
}

/** @param {string} key @param {any} value */
function store(key, value) {
  try { globalThis.localStorage?.setItem(key, JSON.stringify(value)); } catch { /* storage full or denied */ }
}

const toBytes = (/** @type {any} */ x) => (x instanceof Uint8Array ? x
  : ArrayBuffer.isView(x) ? new Uint8Array(x.buffer, x.byteOffset, x.byteLength)
    : x instanceof ArrayBuffer ? new Uint8Array(x) : null);

/** Times each model's runs, interleaved so that drift on a shared machine falls on both.
 * @param {Record<string, any>} models @param {Record<string, any>} feeds */
async function trial(models, feeds) {
  for (let i = 0; i < TRIAL.warmup; i++) for (const m of Object.values(models)) await m.run(feeds);
  /** @type {Record<string, number[]>} */
  const ms = Object.fromEntries(Object.keys(models).map((k) => [k, []]));
  const start = now();
  for (let i = 0; i < TRIAL.runs; i++) {
    for (const [k, m] of Object.entries(models)) {
      const t = now();
      await m.run(feeds);
      ms[k].push(now() - t);
    }
    if (i + 1 >= TRIAL.minRuns && now() - start > TRIAL.budgetMs) break;
  }
  return Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, median(v)]));
}

const fmt = (/** @type {number} */ x) => (x < 10 ? x.toFixed(2) : x.toFixed(0));

/** Both backends: each load measures which runs the model faster here. */
export class AutoRuntime {
  /** @param {any} wasm the wasm Runtime @param {any} webgpu the GpuRuntime */
  constructor(wasm, webgpu) {
    /** @type {"auto"} */
    this.backend = "auto";
    this.wasm = wasm;
    this.webgpu = webgpu;
    this.host = wasm.host;
    this.reason = `each model runs where a trial on it is faster: ${webgpu.reason}; wasm ${wasm.reason}`;
    /** @type {Map<string, any>} */
    this._choices = new Map();
  }

  /** @param {any} source @param {any} [options] */
  async load(source, options = {}) {
    let bytes = toBytes(source);
    if (!bytes && typeof Blob !== "undefined" && source instanceof Blob) bytes = new Uint8Array(await source.arrayBuffer());
    if (!bytes && (typeof source === "string" || source instanceof URL)) {
      bytes = await (options.host ?? this.wasm._hostAdapter).readBytes(source);
    }
    if (!bytes) {
      throw new InputError("cannot load a model from that: give a URL or path, an ArrayBuffer, a typed array or a Blob");
    }
    const name = options.name ?? (typeof source === "string" ? source : undefined);
    return this.loadBytes(bytes, { ...options, name });
  }

  /** @param {Uint8Array} bytes @param {any} [options] */
  async loadBytes(bytes, options = {}) {
    const { backend, ...rest } = options;
    if (backend === "wasm" || backend === "webgpu") { // the caller decides: no trial
      const model = await (backend === "wasm" ? this.wasm : this.webgpu).loadBytes(bytes, rest);
      return Object.assign(model, { choice: Object.freeze({ backend, reason: "as asked", ms: {} }) });
    }
    const key = `wasmrt.backend:${await digest(bytes)}:${this.webgpu.adapter}:${this.wasm.variant}`;
    const known = this._choices.get(key) ?? stored(key);
    const remembered = known && { ...known, reason: `${known.reason}; remembered from an earlier load` };
    if (known?.backend === "webgpu") {
      try {
        return this._keep(await this.webgpu.loadBytes(bytes, { name: rest.name }), null, remembered, "");
      } catch { /* measured again below, and the wasm engine names what is wrong with the file */ }
    }
    const wasmModel = this.wasm.loadBytes(bytes, rest); // refuses a bad file with the wasm engine's words
    if (known?.backend === "wasm") return this._keep(wasmModel, null, remembered, "");
    let gpuModel;
    try {
      gpuModel = await this.webgpu.loadBytes(bytes, { name: rest.name });
    } catch (e) {
      const why = `wasm: WebGPU cannot run this model (${/** @type {Error} */ (e).message})`;
      return this._keep(wasmModel, null, { backend: "wasm", reason: why, ms: {} }, "");
    }
    let ms;
    try {
      ms = await trial({ wasm: wasmModel, webgpu: gpuModel }, trialFeeds(wasmModel));
    } catch (e) { // a model that needs real inputs to run (e.g. data-dependent shapes): the CPU is the safe side
      gpuModel.release();
      const why = `wasm: the trial run failed (${/** @type {Error} */ (e).message})`;
      return this._keep(wasmModel, null, { backend: "wasm", reason: why, ms: {} }, "");
    }
    const faster = ms.webgpu < ms.wasm ? "webgpu" : "wasm";
    const [a, b] = faster === "wasm" ? ["wasm", "WebGPU"] : ["WebGPU", "wasm"];
    const reason = `${a}: ${fmt(Math.min(ms.wasm, ms.webgpu))} ms a run against ${b} ` +
      `${fmt(Math.max(ms.wasm, ms.webgpu))} ms (median of a trial on this device)`;
    const choice = { backend: faster, reason, ms };
    return faster === "wasm" ? this._keep(wasmModel, gpuModel, choice, key) : this._keep(gpuModel, wasmModel, choice, key);
  }

  /** @param {any} model @param {any} other @param {any} choice @param {string} key */
  _keep(model, other, choice, key) {
    other?.release();
    if (key) {
      this._choices.set(key, choice);
      store(key, choice);
    }
    return Object.assign(model, { choice: Object.freeze({ ...choice, ms: Object.freeze({ ...choice.ms }) }) });
  }
}
