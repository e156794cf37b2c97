// wasmrt in a Worker: the same API as init()/load()/run(), with the engine on another thread.
//   import { initWorker } from "wasmrt/worker";
//   const rt = await initWorker({ variant: "simd" });     // Web Worker in pages, worker_threads in Node
//   const model = await rt.load("model.wrt");
//   const out = await model.run(feeds, { transfer: true }); // transfer: hand the input buffers over (no copy)
//   const t = await (await rt.load("model.wrt", { trainable: true })).trainer({ train: "all" }); // as in-thread
// In a mini-program page: initWorker({ port: wx.createWorker(path) }), the Worker running hosts/miniprogram-worker.js.

import { ERROR_CLASSES, WasmrtError } from "./errors.js";
import { fitBatches } from "./fit.js";
import { Tensor } from "./tensor.js";

const isNode = typeof process !== "undefined" && !!process.versions?.node && typeof window === "undefined";

// One shape for every Worker kind: post(msg, transfer), onMessage(fn), terminate().
async function spawn(url, port) {
  if (port) { // a mini-program Worker (wx.createWorker): messages are copied, nothing is transferred
    return {
      post: (m) => port.postMessage(m), onMessage: (fn) => port.onMessage(fn), onError() {},
      terminate: () => port.terminate?.(), ref() {}, unref() {},
    };
  }
  if (isNode) {
    const { Worker } = await import(/* webpackIgnore: true */ "node:worker_threads");
    const w = new Worker(url);
    w.unref?.(); // an idle worker must not keep Node alive; pending calls hold it with ref()
    return {
      post: (m, t) => w.postMessage(m, t), onMessage: (fn) => w.on("message", fn),
      onError: (fn) => w.on("error", fn), terminate: () => w.terminate(), ref: () => w.ref(), unref: () => w.unref(),
    };
  }
  const w = new Worker(url, { type: "module" });
  return {
    post: (m, t) => w.postMessage(m, t), onMessage: (fn) => { w.onmessage = (e) => fn(e.data); },
    onError: (fn) => { w.onerror = (e) => fn(new Error(e.message || "worker failed to start")); },
    terminate: () => w.terminate(), ref() {}, unref() {},
  };
}

function revive(error) {
  const Cls = ERROR_CLASSES[error.name] ?? WasmrtError;
  return new Cls(error.message);
}

// A typed array may be transferred only when it owns its whole buffer.
const ownsBuffer = (a) => ArrayBuffer.isView(a) && a.byteOffset === 0 && a.byteLength === a.buffer.byteLength;

class WorkerRuntime {
  constructor(port, info) {
    this._port = port;
    Object.assign(this, info); // variant, reason, features, host
    this.host = `${info.host} (worker)`;
  }

  async load(source, options = {}) {
    if (typeof source === "string" && !isNode && typeof location !== "undefined") {
      source = new URL(source, location.href).href; // relative to the page, not to the worker script
    } else if (source instanceof URL) {
      source = source.href;
    }
    const { name, maxMemory, maxWork, sparse, conv, trainable } = options;
    const info = await this._port.call("load", { source, name, maxMemory, maxWork, sparse, conv, trainable });
    return new WorkerModel(this._port, info);
  }

  /** {memoryBytes, models} of the worker's engine. */
  stats() { return this._port.call("stats"); }

  terminate() { this._port.close(); }
}

class WorkerModel {
  constructor(port, { id, inputs, outputs, metadata, name }) {
    this._port = port;
    this._id = id;
    Object.assign(this, { inputs, outputs, metadata, name });
  }

  get labels() { return this.metadata.labels; }

  async run(feeds, { transfer = false } = {}) {
    if (!this._id) throw new WasmrtError("this model was released");
    const buffers = [];
    if (transfer) {
      const arrays = ArrayBuffer.isView(feeds) ? [feeds] : feeds instanceof Tensor ? [feeds.data]
        : Object.values(feeds).map((v) => (ArrayBuffer.isView(v) ? v : v?.data));
      for (const a of arrays) if (ownsBuffer(a) && !buffers.includes(a.buffer)) buffers.push(a.buffer);
    }
    const plain = await this._port.call("run", { model: this._id, feeds }, buffers);
    const out = {};
    for (const [k, t] of Object.entries(plain)) out[k] = new Tensor(t.dtype, t.data, t.shape);
    return out;
  }

  /** A trainer in the worker (load the model with {trainable: true}): the Trainer API, its calls answered there. */
  async trainer(options = {}) {
    if (!this._id) throw new WasmrtError("this model was released");
    const info = await this._port.call("trainer", { model: this._id, options });
    return new WorkerTrainer(this._port, info);
  }

  async release() {
    if (!this._id) return;
    const id = this._id;
    this._id = 0;
    await this._port.call("release", { model: id });
  }
}

class WorkerTrainer {
  constructor(port, { id, classes, labels, features }) {
    this._port = port;
    this._id = id;
    Object.assign(this, { classes, labels, features });
    this.history = [];
    this.featureRuns = 0;
    this._sent = new WeakMap(); // sample -> its id in the worker, which keeps its features
    this._next = 1;
  }

  /** Samples as the worker takes them: [{id}] for a sample it has, [{id, data}] with a copy of a new one (the copy
   * transferred, not copied again; the page keeps its sample); anything else is sent as null for the worker's
   * trainer to reject as the page's does. */
  _pack(input) {
    const inputs = input instanceof Float32Array ? [input] : Array.from(input ?? []);
    const fresh = [], transfer = [];
    const samples = inputs.map((x) => {
      const known = x instanceof Float32Array ? this._sent.get(x) : undefined;
      if (known) return { id: known };
      const id = this._next++;
      if (!(x instanceof Float32Array)) return { id, data: null };
      fresh.push([x, id]);
      const data = x.slice().buffer;
      transfer.push(data);
      return { id, data };
    });
    return { samples, transfer, fresh };
  }

  async _call(op, input, args) {
    const { samples, transfer, fresh } = this._pack(input);
    const out = await this._port.call(op, { trainer: this._id, samples, ...args }, transfer);
    for (const [x, id] of fresh) this._sent.set(x, id); // known there once the call succeeded
    this.featureRuns = out.featureRuns;
    return out;
  }

  /** As the trainer's step: the worker computes each sample's features the first time it sees the sample. */
  async step({ input, label }) {
    const { loss } = await this._call("trainStep", input, { label });
    this.history.push(loss);
    return { loss };
  }

  /** As the trainer's fit (progress after every step). */
  fit(batches, options) { return fitBatches(this, batches, options); }

  /** As ChainTrainer.predict (train: "all" / "last:N" / a layer): the logits of each sample, a promise. */
  async predict(inputs) { return (await this._call("trainPredict", inputs, {})).logits; }

  /** The tuned model's .wrt bytes (a promise). */
  export() { return this._port.call("trainExport", { trainer: this._id }); }

  /** The trained weights (a promise): {weight, bias} for train: "head", the trained tensors by name otherwise. */
  get weights() { return this._port.call("trainWeights", { trainer: this._id }); }

  /** Drop the worker's trainer, its cached features and the engine memory it holds. */
  async release() { await this._port.call("trainRelease", { trainer: this._id }); }
}

/**
 * Start a Worker running wasmrt and initialize it. options: those of init() (variant, wasmPaths; not host),
 * plus workerUrl to serve worker.js from elsewhere, or port: a mini-program Worker (wx.createWorker(path)) running
 * hosts/miniprogram-worker.js (its init options: wasmDir, brotli, variants, wasmBytes).
 */
export async function initWorker(options = {}) {
  const { workerUrl, port: given, ...initOptions } = options;
  const port = await spawn(given ? null : workerUrl ?? new URL("./worker.js", import.meta.url), given);
  const pending = new Map();
  let next = 1, dead = null;
  const failAll = (err) => {
    dead = err;
    for (const { reject } of pending.values()) reject(err);
    pending.clear();
    port.unref();
  };
  port.onMessage((m) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (!pending.size) port.unref();
    if (m.ok) p.resolve(m.result);
    else p.reject(revive(m.error));
  });
  port.onError((e) => failAll(new WasmrtError(`the wasmrt worker failed: ${e.message}`, { cause: e })));
  const rpc = {
    call(op, args, transfer = []) {
      if (dead) return Promise.reject(dead);
      const id = next++;
      port.ref();
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        port.post({ id, op, args }, transfer);
      });
    },
    close() {
      port.terminate();
      failAll(new WasmrtError("the wasmrt worker was terminated"));
    },
  };
  const info = await rpc.call("init", initOptions);
  return new WorkerRuntime(rpc, info);
}
