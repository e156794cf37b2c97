// Runtime = one instantiated engine (one wasm memory); Model = one loaded .wrt inside it.
// Everything crossing into wasm goes through the C API of kernels_wasm/engine/wasmrt.h. Pointers come back from
// wasm as signed i32: `>>> 0` makes them unsigned, so the whole 4 GiB address space works.

import { CHOOSE_MODES, loadMeasured, measure, planOf } from "./choose.js";
import { ERROR_CODES, errorFromCode, InputError, OutOfMemoryError, WasmrtError } from "./errors.js";
import { Trainer } from "./trainer.js"; // static: mini-programs load no modules at run time
import { ChainTrainer } from "./train/chain_trainer.js";
import { readMetadata } from "./format/reader.js";
import {
  arrayTypeOf, DTYPES, dtypeOfArray, float16BitsView, float16FromBits, sizeOf, Tensor, toFloat16Bits,
} from "./tensor.js";

const REQUIRED_EXPORTS = [
  "memory", "wrt_alloc", "wrt_free", "wrt_load_begin", "wrt_load_next", "wrt_release", "wrt_run", "wrt_error_message",
  "wrt_active_op",
  "wrt_num_inputs", "wrt_num_outputs", "wrt_tensor_name", "wrt_tensor_rank", "wrt_tensor_dim",
  "wrt_tensor_dtype", "wrt_tensor_bytes", "wrt_input_ptr", "wrt_output_ptr",
];

const SPARSE_POLICIES = { auto: 0, always: 1, never: 2 }; // wrt_set_sparse_policy
const CONV_ALGOS = { auto: 0, igemm: 1, wino2: 2, wino4: 3 }; // wrt_set_conv_algo (WRT_CONV_* of wasmrt.h)
const utf8 = new TextDecoder("utf-8");
const u32 = (p) => p >>> 0;

// Models dropped without release() give their engine memory back when collected.
const finalizer = typeof FinalizationRegistry === "function"
  ? new FinalizationRegistry(({ runtime, handle }) => runtime._releaseHandle(handle))
  : null;

export class Runtime {
  /** The package's version (index.js sets it): part of the choice cache's key. */
  static packageVersion = "";

  /** Use wasmrt.init(); this wraps an already instantiated engine (the wasm backend of backends.js). skipped: why
   * the backends init({backend: "auto"}) tried first were not used. */
  /** @param {any} instance @param {{variant: any, reason: string, features: any, host: any, threads?: number,
   * threadsReason?: string, workers?: any[], skipped?: string, builtFor?: readonly string[] | null}} options */
  constructor(instance, { variant, reason, features, host, threads = 1, threadsReason = "", workers = [], skipped = "",
    builtFor = null }) {
    const ex = instance.exports;
    const missing = REQUIRED_EXPORTS.filter((k) => !(k in ex));
    if (missing.length) {
      throw new WasmrtError(`the ${variant} engine module lacks the exports ${missing.join(", ")} (wrong .wasm file?)`);
    }
    /** @type {"wasm"} */
    this.backend = "wasm";
    this._ex = ex;
    this._broken = null;
    this._live = new Set(); // handles of loaded models
    /** "relaxed" | "simd" | "scalar" */
    this.variant = variant;
    /** Threads a run uses (1 without cross-origin isolation, shared memory or Workers: threadsReason says). */
    this.threads = threads;
    this.threadsReason = threadsReason;
    /** Why this variant was picked (and why better ones were not), how many threads, and why not another backend. */
    this.reason = [reason, threadsReason, skipped].filter(Boolean).join("; ");
    this._workers = workers;
    /** What the probes found: {simd: {available, reason}, relaxed: {available, reason}} */
    this.features = features;
    this.host = host.name;
    this._hostAdapter = host;
    /** The models a module built by `wasmrt build --for` holds the ops of (init({modules})); null: the full module. */
    this.builtFor = builtFor;
  }

  /** Stop the engine's Workers (threaded runtimes); the runtime and its models are unusable afterwards. */
  close() {
    this._workers.forEach((w) => w.terminate());
    this._workers = [];
    this._closed = true;
  }

  /** Bytes of wasm linear memory (it grows as needed and never shrinks). */
  get memoryBytes() { return this._ex.memory.buffer.byteLength; }

  /** The kernel target the engine reports (e.g. "wasm-simd128"), when the module exports it. */
  get target() { return this._ex.wrt_target_name ? this._cstr(u32(this._ex.wrt_target_name())) : this.variant; }

  /**
   * Load a model: a URL or path string, a URL, an ArrayBuffer, a typed array, or a Blob/File.
   * The bytes are copied into the engine and not kept. Options: name; maxMemory (bytes the model may claim,
   * default 1 GiB) and maxWork (estimated multiply-adds of one run, default 2^33): a model beyond them is refused
   * before anything large is allocated (OutOfMemoryError / ResourceLimitError naming the limit); sparse: which
   * kernels run block-sparse weights, "auto" (default), "always" or "never" (for benchmarks).
   */
  async load(source, options = {}) {
    const host = options.host ?? this._hostAdapter;
    const bytes = await readSource(source, host);
    if (options.choose !== "measure") return this.loadBytes(bytes, options);
    this._checkLoad(bytes, options);
    return loadMeasured(this, toBytes(bytes), (b, choices, force) => this._loadForced(b, options, choices, force),
      host.storage, Runtime.packageVersion, deviceIdentity());
  }

  /** Synchronous load from bytes already in memory.
   * @param {ArrayBuffer | ArrayBufferView} bytes @param {import("./backend.js").LoadOptions} [options] */
  loadBytes(bytes, options = {}) {
    const choose = this._checkLoad(bytes, options);
    const copy = choose === "measure" ? toBytes(bytes).slice() : bytes; // measured here without a cache (see load)
    const model = choose === "measure" ? measure(this, (c, f) => this._loadForced(copy, options, c, f))
      : this._loadForced(bytes, options, [], choose === "deterministic" ? 0 : -1);
    model._chosenBy = choose === "measure" ? "measured" : choose;
    // kept only when asked: a trainer's export() writes into a copy of the file (a reference, not a copy)
    if (options.trainable) model._source = toBytes(bytes);
    return model;
  }

  _checkLoad(bytes, { maxMemory = 0, maxWork = 0, sparse = "auto", conv = "auto", choose = "rules" }) {
    this._usable();
    if (!toBytes(bytes)) throw new InputError("loadBytes needs an ArrayBuffer or a typed array");
    for (const [k, v] of [["maxMemory", maxMemory], ["maxWork", maxWork]]) {
      if (typeof v !== "number" || !(v >= 0)) throw new InputError(`${k} must be a number >= 0 (0: the default), got ${v}`);
    }
    if (!(sparse in SPARSE_POLICIES)) throw new InputError(`sparse must be "auto", "always" or "never", got ${sparse}`);
    if (!Object.hasOwn(CONV_ALGOS, conv)) {
      throw new InputError(`conv must be one of ${Object.keys(CONV_ALGOS).map((k) => `"${k}"`).join(", ")}, got ${conv}`);
    }
    if (CONV_ALGOS[conv] && !this._ex.wrt_set_conv_algo) throw new InputError(`this engine build has no conv option (${conv})`);
    if (!CHOOSE_MODES.includes(choose)) {
      throw new InputError(`choose must be "rules", "measure" or "deterministic", got ${choose}`);
    }
    if (choose !== "rules" && !this._ex.wrt_set_choices) throw new InputError(`this engine build has no choose option (${choose})`);
    return choose;
  }

  // One load with per-op forced candidate indices (choices[i], -1: the rules) and `force` on every other op.
  _loadForced(bytes, { name, maxMemory = 0, maxWork = 0, sparse = "auto", conv = "auto" }, choices, force) {
    bytes = toBytes(bytes);
    const ex = this._ex;
    const policy = SPARSE_POLICIES[sparse], algo = CONV_ALGOS[conv];
    if (policy && !ex.wrt_set_sparse_policy) throw new InputError(`this engine build has no sparse option (${sparse})`);
    // The engine takes the block holding the file, frees it once the structure is read, then asks for each
    // constant again as it packs it: the file's bytes and the packed weights are never in wasm memory together
    // (wasm memory never shrinks, so that sum would stay).
    // Constants are read twice (checked, then packed): bytes another thread could change in between are copied.
    if (typeof SharedArrayBuffer !== "undefined" && bytes.buffer instanceof SharedArrayBuffer) bytes = bytes.slice();
    const errPtr = this._alloc(12, "an error code");
    let ptr = 0, handle = 0, code = 0;
    try {
      ptr = this._alloc(bytes.length || 1, "the model file");
      new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
      const old = ex.wrt_set_sparse_policy?.(policy);
      const oldAlgo = ex.wrt_set_conv_algo?.(algo); // process-wide in the engine: set for this load only
      try {
        this._setChoices(choices, force);
        const p = ptr;
        ptr = 0; // the engine's now (freed by it, also on error)
        handle = u32(this._call(() => ex.wrt_load_begin(p, bytes.length, maxMemory, maxWork, errPtr)));
        code = new Int32Array(ex.memory.buffer, errPtr, 1)[0];
        while (handle) {
          const n = this._call(() => ex.wrt_load_next(handle, errPtr + 4));
          if (n === 0) break;
          if (n < 0) {
            code = -n;
            ex.wrt_release(handle);
            handle = 0;
            break;
          }
          const [dst, at] = new Uint32Array(ex.memory.buffer, errPtr + 4, 2); // the memory may have grown
          new Uint8Array(ex.memory.buffer, dst, n).set(bytes.subarray(at, at + n));
        }
      } finally {
        if (!this._broken && old !== undefined) ex.wrt_set_sparse_policy(old);
        if (!this._broken && oldAlgo !== undefined) ex.wrt_set_conv_algo(oldAlgo);
        if (!this._broken && ex.wrt_set_choices) {
          ex.wrt_set_choices(0, 0);
          ex.wrt_force_choice(-1);
        }
      }
    } finally {
      if (!this._broken) {
        if (ptr) ex.wrt_free(ptr);
        ex.wrt_free(errPtr);
      }
    }
    if (!handle) throw errorFromCode(code || ERROR_CODES.FORMAT, this._message());
    if (this.threads > 1) ex.wrt_set_threads(handle, this.threads);
    try {
      return new Model(this, handle, readMetadata(bytes), name);
    } catch (e) {
      ex.wrt_release(handle);
      throw e;
    }
  }

  // -- internals shared with Model --------------------------------------------------------------------------

  _setChoices(choices, force) {
    const ex = this._ex;
    if (!ex.wrt_set_choices) return;
    ex.wrt_force_choice(force);
    if (!choices.length) return;
    const p = this._alloc(choices.length * 4, "the choice vector");
    try {
      new Int32Array(ex.memory.buffer, p, choices.length).set(choices);
      const code = ex.wrt_set_choices(p, choices.length);
      if (code !== ERROR_CODES.OK) throw errorFromCode(code, this._message());
    } finally {
      ex.wrt_free(p);
    }
  }

  _usable() {
    if (this._closed) throw new WasmrtError("this runtime was closed (close()); create a new one with init()");
    if (this._broken) {
      throw new WasmrtError(`this runtime stopped after an engine crash (${this._broken}); create a new one with init()`);
    }
  }

  // Engine-reported errors leave the engine consistent; a trap (a bug) may not, so the runtime refuses further work.
  _call(fn) {
    try {
      return fn();
    } catch (e) {
      if (e instanceof WebAssembly.RuntimeError) {
        let where = "";
        try { where = this._cstr(u32(this._ex.wrt_active_op())); } catch { /* the op is unknown */ }
        this._broken = where ? `${e.message} in ${where}` : e.message;
        throw new WasmrtError(`the engine crashed: ${this._broken} (please report this with the model)`, { cause: e });
      }
      throw e;
    }
  }

  _alloc(n, what) {
    const p = u32(this._call(() => this._ex.wrt_alloc(n)));
    if (!p) throw new OutOfMemoryError(`cannot allocate ${n} bytes for ${what} (wasm memory ${this.memoryBytes} bytes)`);
    return p;
  }

  _cstr(ptr) {
    if (!ptr) return "";
    const mem = new Uint8Array(this._ex.memory.buffer);
    let end = ptr;
    while (end < mem.length && mem[end] !== 0) end++;
    return utf8.decode(mem.slice(ptr, end)); // a copy: TextDecoder refuses views of shared memory
  }

  _message() { return this._cstr(u32(this._ex.wrt_error_message())); }

  _releaseHandle(handle) {
    if (this._live.delete(handle) && !this._broken) this._ex.wrt_release(handle);
  }
}

/** What the choice cache knows of the device: the user agent or Node's CPU, and the cores. */
function deviceIdentity() {
  const nav = globalThis.navigator;
  if (typeof process !== "undefined" && process.versions?.node) {
    return `node ${process.platform} ${process.arch} ${nav?.hardwareConcurrency ?? ""}`;
  }
  return `${nav?.userAgent ?? "unknown"} ${nav?.hardwareConcurrency ?? ""}`;
}

function toBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  return null;
}

async function readSource(source, host) {
  const bytes = toBytes(source);
  if (bytes) return bytes;
  if (typeof Blob !== "undefined" && source instanceof Blob) return new Uint8Array(await source.arrayBuffer());
  if (typeof source === "string" || source instanceof URL) return host.readBytes(source);
  const what = source && typeof source === "object" ? source.constructor?.name ?? "object" : typeof source;
  throw new InputError(`cannot load a model from ${what}: ` +
    "give a URL or path, an ArrayBuffer, a typed array or a Blob");
}

function tensorInfo(rt, handle, which, i) {
  const ex = rt._ex;
  const rank = ex.wrt_tensor_rank(handle, which, i);
  const shape = [];
  for (let a = 0; a < rank; a++) shape.push(ex.wrt_tensor_dim(handle, which, i, a));
  const code = ex.wrt_tensor_dtype(handle, which, i);
  const info = {
    name: rt._cstr(u32(ex.wrt_tensor_name(handle, which, i))),
    shape: Object.freeze(shape),
    dtype: DTYPES[code] ?? `dtype#${code}`,
  };
  if (which === 0 && ex.wrt_input_dim_min) { // inputs sized at run time: [min, max] per dimension
    const bounds = shape.map((_, a) => Object.freeze([ex.wrt_input_dim_min(handle, i, a), ex.wrt_input_dim_max(handle, i, a)]));
    if (bounds.some(([lo, hi]) => lo !== hi)) info.bounds = Object.freeze(bounds);
  }
  return Object.freeze(info);
}

const dims = (t) => t.bounds ? t.bounds.map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo}..${hi}`)).join(", ") : t.shape.join(", ");
const describe = (t) => `${t.dtype} [${dims(t)}]`;
const accepts = (t, shape) => shape.length === t.shape.length &&
  shape.every((d, a) => (t.bounds ? d >= t.bounds[a][0] && d <= t.bounds[a][1] : d === t.shape[a]));

export class Model {
  constructor(runtime, handle, metadata, name) {
    this._rt = runtime;
    this._h = handle;
    /** @type {readonly import("./backend.js").TensorInfo[]} */
    this.inputs = [];
    /** @type {readonly import("./backend.js").TensorInfo[]} */
    this.outputs = [];
    this._specs();
    /** {source, producer, preprocess: {inputIndex: hints}, labels, props} from the model file */
    this.metadata = metadata;
    this.name = name ?? metadata.source ?? "";
    runtime._live.add(handle);
    finalizer?.register(this, { runtime, handle }, this);
  }

  _specs() {
    const rt = this._rt, ex = rt._ex, h = this._h;
    this.inputs = Object.freeze(Array.from({ length: ex.wrt_num_inputs(h) }, (_, i) => tensorInfo(rt, h, 0, i)));
    this.outputs = Object.freeze(Array.from({ length: ex.wrt_num_outputs(h) }, (_, i) => tensorInfo(rt, h, 1, i)));
  }

  /** Some input takes its size at run time (a model converted with --dynamic): see resize(). */
  get dynamic() { return this.inputs.some((t) => t.bounds); }

  /**
   * New sizes for inputs sized at run time ({name: shape}; inputs not named keep theirs). The engine re-plans its
   * arena and tables (the weights stay); inputs and outputs then give the new shapes. run() does this by itself
   * when given another size. A size outside an input's bounds, or beyond the model's limits, throws and leaves the
   * model as it was.
   */
  resize(shapes) {
    if (!this._h) throw new WasmrtError("this model was released");
    const rt = this._rt;
    rt._usable();
    const names = this.inputs.map((t) => t.name);
    for (const k of Object.keys(shapes ?? {})) {
      if (!names.includes(k)) throw new InputError(`unknown input '${k}'; the model's inputs are ${JSON.stringify(names)}`);
    }
    const all = this.inputs.map((t) => {
      const s = shapes[t.name] ?? t.shape;
      if (!Array.isArray(s) || !accepts(t, s)) {
        throw new InputError(`input '${t.name}': shape [${s}] does not fit the model's [${dims(t)}]`);
      }
      return s;
    });
    this._resize(all);
  }

  _resize(shapes) {
    const rt = this._rt, ex = rt._ex;
    const flat = Int32Array.from(shapes.flat());
    const ptr = rt._alloc(Math.max(flat.byteLength, 4), "the input shapes");
    try {
      rt._call(() => {
        new Int32Array(ex.memory.buffer, ptr, flat.length).set(flat);
        const code = ex.wrt_resize_inputs(this._h, ptr, flat.length);
        if (code !== ERROR_CODES.OK) throw errorFromCode(code, rt._message());
      });
    } finally {
      if (!rt._broken) ex.wrt_free(ptr);
    }
    this._specs();
  }

  /**
   * A streaming session over a model whose state is an input and an output (recurrent models): step(feeds) runs
   * the model with the state carried from the previous step (zeros at first) and returns the outputs. pairs maps
   * each state output to the input it feeds ({outputName: inputName}); default: the pairs stored in the model
   * (TFLite LSTM state, or `wasmrt convert --state`).
   */
  /** A trainer on this engine: of the classifier (train: "head", ./trainer.js), or of several layers (train: "all",
   * "last:N" or a layer's name, ./train/chain_trainer.js). */
  async trainer(options) {
    if (!this._h) throw new WasmrtError("this model was released");
    if (!this._source) {
      throw new InputError("model.trainer(): load the model with {trainable: true}; its export() writes into a copy "
        + "of the file's bytes, which a model does not keep otherwise");
    }
    const train = options?.train ?? "head";
    return train === "head" ? new Trainer(this, this._source, options) : new ChainTrainer(this, this._source, options);
  }

  stream(pairs) {
    return new Stream(this, pairs ?? statePairs(this.metadata));
  }

  /** Class names stored in the model (empty when it has none). */
  get labels() { return this.metadata.labels; }

  /** Per op in execution order: {op, type, name, kernel, candidates, chosen, timesMs} (load's choose option). */
  plan() {
    if (!this._h) throw new WasmrtError("this model was released");
    return planOf(this);
  }

  /** How each op's algorithm was chosen: "rules", "deterministic", "measured" or "cache". */
  get chosenBy() { return this._chosenBy ?? "rules"; }

  _runOps(begin, end) {
    const rt = this._rt;
    rt._call(() => {
      const code = rt._ex.wrt_run_ops(this._h, begin, end);
      if (code !== ERROR_CODES.OK) throw errorFromCode(code, rt._message());
    });
  }

  get released() { return this._h === 0; }

  /** Run the model. Resolves to {outputName: Tensor}; outputs are copies, safe to keep. */
  async run(feeds) { return this.runSync(feeds); }

  /**
   * Input `index`'s buffer in engine memory, as a typed array of its current shape (float32 and integer inputs):
   * fill it (an image operation of the same runtime writes there directly) and give run() this very array, which
   * it then does not copy. A run may use that memory for its own work: fill it before every run. Valid until the
   * engine memory grows (a load, a resize): take a new one per run.
   */
  inputView(index = 0) {
    if (!this._h) throw new WasmrtError("this model was released");
    const spec = this.inputs[index];
    if (!spec) throw new InputError(`input ${index}: this model has ${this.inputs.length} inputs`);
    if (spec.dtype === "float16") throw new InputError(`input '${spec.name}' is float16: it has no typed array view`);
    const ex = this._rt._ex;
    return new (arrayTypeOf(spec.dtype))(ex.memory.buffer, u32(ex.wrt_input_ptr(this._h, index)), sizeOf(spec.shape));
  }

  runSync(feeds) {
    if (!this._h) throw new WasmrtError("this model was released");
    const rt = this._rt;
    rt._usable();
    const values = this._feedsByIndex(feeds);
    const ex = rt._ex;
    const shapes = values.map((v) => v.shape);
    if (shapes.some((s, i) => s.some((d, a) => d !== this.inputs[i].shape[a]))) this._resize(shapes);
    return rt._call(() => { // every call into the engine: a trap becomes a WasmrtError
      values.forEach(({ data }, i) => {
        const f16 = this.inputs[i].dtype === "float16"; // copied as bits: a Float16Array or a Uint16Array of bits
        const T = f16 ? Uint16Array : arrayTypeOf(this.inputs[i].dtype), ptr = u32(ex.wrt_input_ptr(this._h, i));
        if (data.buffer === ex.memory.buffer && data.byteOffset === ptr) return; // inputView(i), filled in place
        new T(ex.memory.buffer, ptr, data.length).set(f16 ? float16BitsView(data) : data);
      });
      const code = ex.wrt_run(this._h);
      if (code !== ERROR_CODES.OK) throw errorFromCode(code, rt._message());
      const out = {};
      this.outputs.forEach((o, i) => {
        const f16 = o.dtype === "float16"; // the bits, as a Float16Array where the host has one
        const T = f16 ? Uint16Array : arrayTypeOf(o.dtype);
        const ptr = u32(ex.wrt_output_ptr(this._h, i));
        const n = sizeOf(o.shape);
        const data = new T(ex.memory.buffer, ptr, n).slice(); // a plain copy
        out[o.name] = new Tensor(o.dtype, f16 ? float16FromBits(data) : data, o.shape.slice());
      });
      return out;
    });
  }

  /** Free the model's engine memory (weights, arena). Further run() calls throw. Safe to call twice. */
  release() {
    if (!this._h) return;
    finalizer?.unregister(this);
    this._rt._releaseHandle(this._h);
    this._h = 0;
  }

  // Validate feeds against the model's inputs; returns the typed arrays in input order.
  _feedsByIndex(feeds) {
    const names = this.inputs.map((t) => t.name);
    const tensorLike = ArrayBuffer.isView(feeds?.data) && Array.isArray(feeds?.shape) && !names.includes("data");
    const single = feeds instanceof Tensor || tensorLike || ArrayBuffer.isView(feeds) || Array.isArray(feeds);
    if (single) {
      if (this.inputs.length !== 1) {
        throw new InputError(`this model has ${this.inputs.length} inputs (${names.join(", ")}): pass {name: tensor}`);
      }
      feeds = { [names[0]]: feeds };
    }
    if (feeds === null || typeof feeds !== "object") {
      throw new InputError("run() takes {inputName: tensor}, a wasmrt.Tensor or a typed array");
    }
    for (const k of Object.keys(feeds)) {
      if (!names.includes(k)) throw new InputError(`unknown input '${k}'; the model's inputs are ${JSON.stringify(names)}`);
    }
    return this.inputs.map((spec) => {
      const v = feeds[spec.name];
      if (v === undefined || v === null) throw new InputError(`missing input '${spec.name}' (${describe(spec)})`);
      return checkFeed(spec, v);
    });
  }
}

function checkFeed(spec, v) {
  let data, shape, dtype;
  if (ArrayBuffer.isView(v) || Array.isArray(v)) [data, shape] = [v, spec.shape];
  else ({ data, shape, dtype } = v);
  if (!ArrayBuffer.isView(data) && !Array.isArray(data)) {
    throw new InputError(`input '${spec.name}': expected a typed array, {data, shape} or a wasmrt.Tensor`);
  }
  shape ??= spec.shape;
  if (!Array.isArray(shape) || !accepts(spec, shape)) {
    throw new InputError(`input '${spec.name}': shape [${shape}] does not match the model's [${dims(spec)}]`);
  }
  const got = Array.isArray(data) ? spec.dtype : dtypeOfArray(data);
  if ((dtype && dtype !== spec.dtype) || got !== spec.dtype) {
    throw new InputError(`input '${spec.name}': expected ${spec.dtype} data, got ${dtype ?? data.constructor.name}`);
  }
  if (Array.isArray(data)) {
    data = spec.dtype === "float16" ? float16FromBits(toFloat16Bits(data)) : arrayTypeOf(spec.dtype).from(data);
  }
  if (data.length !== sizeOf(shape)) {
    throw new InputError(`input '${spec.name}': ${data.length} elements given, shape [${shape.join(", ")}] ` +
      `needs ${sizeOf(shape)}`);
  }
  return { data, shape };
}

/** {stateOutput: stateInput} from the model's metadata props "state.<output>" = "<input>". */
function statePairs(metadata) {
  const pairs = {};
  for (const [k, v] of Object.entries(metadata?.props ?? {})) if (k.startsWith("state.")) pairs[k.slice(6)] = v;
  return pairs;
}

export class Stream {
  constructor(model, pairs) {
    const ins = new Map(model.inputs.map((t) => [t.name, t])), outs = new Set(model.outputs.map((t) => t.name));
    for (const [o, i] of Object.entries(pairs)) {
      if (!outs.has(o) || !ins.has(i)) {
        throw new InputError(`state pair ${o} -> ${i}: the model has no output '${o}' or no input '${i}'`);
      }
    }
    if (!Object.keys(pairs).length) throw new InputError("this model has no state pairs (give {output: input})");
    this.model = model;
    this.pairs = Object.freeze({ ...pairs });
    /** @type {Record<string, Tensor>} */
    this.state = {};
    this.reset();
  }

  /** Back to the zero state. */
  reset() {
    this.state = {};
    for (const [, i] of Object.entries(this.pairs)) {
      const t = this.model.inputs.find((s) => s.name === i);
      this.state[i] = new Tensor(t.dtype, new (arrayTypeOf(t.dtype))(sizeOf(t.shape)), t.shape.slice());
    }
  }

  /** Run one step: feeds holds the other inputs; returns every output, and keeps the new state. */
  async step(feeds) { return this.stepSync(feeds); }

  stepSync(feeds) {
    const out = this.model.runSync({ ...feeds, ...this.state });
    for (const [o, i] of Object.entries(this.pairs)) this.state[i] = out[o];
    return out;
  }
}
