// The WebGPU backend: the generated WGSL kernels (kernels.js) on navigator.gpu, in pages and Workers. Loaded by
// init({backend: "webgpu" | "auto"}) only (backends.js), so the wasm path never downloads it. GpuRuntime implements
// the backend contract of ../backend.d.ts.
//
// load(): constants uploaded once into one buffer, one arena buffer at the .wrt memory plan's offsets, one pipeline per
// kernel, one bind group per op. run(): inputs written into the arena, every dispatch recorded into one compute pass
// of one command buffer, outputs copied into a mappable buffer and read back asynchronously. With {fallback: "wasm"}
// the ops without a WGSL kernel run on the wasm engine between GPU passes (split.js), reported in model.fallback.

import { InputError, ModelFormatError, UnsupportedOpError, WasmrtError } from "../errors.js";
import { readMetadata, readWrt } from "../format/reader.js";
import { Tensor } from "../tensor.js";
import { fromF16, toF16 } from "../f16.js";
import { KERNELS } from "./kernels.js";
import { packParams, plan } from "./plan.js";
import { report, split, WasmSide } from "./split.js";

const UNIFORM_ALIGN = 256;
const S = () => globalThis.GPUBufferUsage;

/** A GpuRuntime when WebGPU is present and working here; otherwise throws a WasmrtError saying why. "Working" means
 * a device was created and ran one of our kernels with the right answer. host: the host adapter that reads model
 * files; auto: chosen by init({backend: "auto"}) (the reason says so); wasmRuntime: () => Promise of the wasm
 * runtime that runs the ops without a WGSL kernel (load option fallback: "wasm"). */
/** @param {{host?: any, auto?: boolean, wasmRuntime?: (() => Promise<any>) | null}} [options] */
export async function openDevice({ host, auto = false, wasmRuntime = null } = {}) {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) throw new WasmrtError("WebGPU is not available here (no navigator.gpu)");
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) throw new WasmrtError("WebGPU is present but no adapter was found (navigator.gpu.requestAdapter() gave null)");
  const lim = adapter.limits;
  const device = await adapter.requestDevice({
    requiredFeatures: adapter.features.has("shader-f16") ? ["shader-f16"] : [],
    requiredLimits: {
      maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, maxBufferSize: lim.maxBufferSize,
      maxComputeWorkgroupStorageSize: lim.maxComputeWorkgroupStorageSize,
    },
  });
  const info = adapter.info ?? {};
  const gpuRt = new GpuRuntime(device, `${info.vendor || "?"} ${info.architecture || info.description || ""}`.trim(),
    { host, auto, wasmRuntime });
  await gpuRt.selfTest();
  return gpuRt;
}

export class GpuRuntime {
  /** @param {any} device @param {string} adapter
   * @param {{host?: any, auto?: boolean, wasmRuntime?: (() => Promise<any>) | null}} [options] */
  constructor(device, adapter, { host = null, auto = false, wasmRuntime = null } = {}) {
    this.device = device;
    this.adapter = adapter;
    /** @type {"webgpu"} */
    this.backend = "webgpu";
    this.reason = `WebGPU adapter ${adapter}${auto ? " (auto: WebGPU present and working)" : ""}`;
    this._hostAdapter = host;
    /** The host adapter's name. */
    this.host = host?.name ?? "";
    this.wasmRuntime = wasmRuntime;
    this._pipelines = new Map();
    this._bgl = device.createBindGroupLayout({
      entries: [
        { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } },
        { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
        { binding: 2, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
      ],
    });
    this._layout = device.createPipelineLayout({ bindGroupLayouts: [this._bgl] });
  }

  // a kernel over f32 or f16 buffers: its code starts with the f32 storage header, swapped for the f16 one
  async pipeline(name, storage = "f32") {
    const key = `${name}:${storage}`;
    if (!this._pipelines.has(key)) {
      const head = KERNELS.storage.f32;
      const code = KERNELS.storage[storage] + KERNELS.kernels[name].code.slice(head.length);
      const module = this.device.createShaderModule({ label: name, code });
      this._pipelines.set(key, this.device.createComputePipelineAsync({
        label: name, layout: this._layout, compute: { module, entryPoint: "main" },
      }).catch((e) => { this._pipelines.delete(key); throw new WasmrtError(`WebGPU kernel ${name}: ${e.message}`); }));
    }
    return this._pipelines.get(key);
  }

  // relu over [-1, 2, -3, 4] through the real path (pipeline, bind group, dispatch, readback)
  async selfTest() {
    const d = { kernel: "unary_relu", params: { gx: 1, n: 4, x: 0, y: 4 }, groups: [1, 1, 1] };
    const m = new GpuModel(this, { plan: { constants: new Float32Array(64), dispatches: [d], arenaBytes: 32 }, ins: [], outs: [] });
    await m._build();
    const got = await m._execute([[0, new Float32Array([-1, 2, -3, 4])]], [[16, 16]]);
    m.release();
    const want = [0, 2, 0, 4];
    const out = new Float32Array(got[0]);
    if (!want.every((v, i) => out[i] === v)) {
      throw new WasmrtError(`WebGPU ran a test kernel with a wrong result (${Array.from(out)}, expected ${want})`);
    }
  }

  /** Load a .wrt model: URL, path, ArrayBuffer, typed array or Blob (as the wasm runtime's load). */
  async load(source, options = {}) {
    let bytes;
    if (source instanceof Uint8Array) bytes = source;
    else if (ArrayBuffer.isView(source)) bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    else if (source instanceof ArrayBuffer) bytes = new Uint8Array(source);
    else if (typeof Blob !== "undefined" && source instanceof Blob) bytes = new Uint8Array(await source.arrayBuffer());
    else if (typeof source === "string" || source instanceof URL) bytes = await (options.host ?? this._hostAdapter).readBytes(source);
    else throw new InputError("cannot load a model from that: give a URL or path, an ArrayBuffer, a typed array or a Blob");
    return this.loadBytes(bytes, { name: options.name ?? (typeof source === "string" ? source : undefined),
      storage: options.storage, fallback: options.fallback });
  }

  /** Load a .wrt model (bytes); refuses models with ops that have no WGSL kernel, naming the op, unless fallback
   * is "wasm": those ops then run on the wasm engine and model.fallback reports them and the tensors crossing.
   * storage "f16" keeps activations and weights as f16 on the GPU (adapters with shader-f16; f32 arithmetic).
   * @param {Uint8Array} bytes @param {{name?: string, storage?: "f32" | "f16", fallback?: "wasm" | null}} [options] */
  async loadBytes(bytes, { name, storage = "f32", fallback = null } = {}) {
    const label = name ?? "<bytes>";
    if (storage !== "f32" && storage !== "f16") {
      throw new InputError(`load(..., {storage}) takes "f32" or "f16", not ${JSON.stringify(storage)}`);
    }
    if (fallback !== null && fallback !== "wasm") {
      throw new InputError(`load(..., {fallback}) takes "wasm" or null, not ${JSON.stringify(fallback)}`);
    }
    if (storage === "f16" && !this.device.features.has("shader-f16")) {
      throw new WasmrtError(`${label}: f16 storage needs the WebGPU feature shader-f16, which this adapter ` +
        `(${this.adapter}) does not have; load with storage "f32"`);
    }
    const es = storage === "f16" ? 2 : 4; // bytes per element on the GPU
    let model;
    try {
      model = readWrt(bytes);
    } catch (e) {
      if (e instanceof WasmrtError) throw new ModelFormatError(`${label}: ${e.message}`, { cause: e });
      throw e;
    }
    const p = plan(model, label, fallback === "wasm");
    const segs = split(model, p.wasmOps);
    let wasm = null;
    if (p.wasmOps.size) {
      for (const i of [...model.inputs, ...model.outputs]) {
        const t = model.tensors[i];
        if (t.dtype !== "float32") {
          throw new UnsupportedOpError(`${label} (backend webgpu, fallback wasm): graph ${model.inputs.includes(i) ? "input" : "output"} ` +
            `'${t.name}' is ${t.dtype}; this backend's inputs and outputs are float32`);
        }
      }
      if (!this.wasmRuntime) throw new WasmrtError(`${label}: fallback "wasm" needs a runtime from init()`);
      const wrt = await this.wasmRuntime();
      wasm = new WasmSide(wrt.loadBytes(bytes, { name: label }));
    }
    const specs = (list) => Object.freeze(list.map((i) => Object.freeze({
      name: model.tensors[i].name, shape: Object.freeze(model.tensors[i].shape.slice()), dtype: model.tensors[i].dtype,
    })));
    const io = (list) => list.map((i) => [model.tensors[i].arenaOffset / 4 * es, model.tensors[i].size * es]);
    const m = new GpuModel(this, {
      metadata: readMetadata(bytes), plan: p, ins: io(model.inputs), outs: io(model.outputs), name: label, storage,
      inputs: specs(model.inputs), outputs: specs(model.outputs), segs, wasm, tensors: model.tensors,
      fallback: report(model, p.wasmOps, segs, (k) => wasm.opType(k)),
    });
    try {
      await m._build();
    } catch (e) {
      m.release();
      throw e;
    }
    return m;
  }
}

export class GpuModel {
  /** ins, outs: [arena byte offset, bytes] of each input and output; segs, wasm, tensors: the wasm fallback's
   * segments, the wasm engine's copy of the model (WasmSide) and the file's tensors (fallback "wasm" only). */
  constructor(rt, { metadata = null, plan, ins, outs, name = "", storage = "f32", inputs = [], outputs = [], segs = null,
    wasm = null, tensors = [], fallback = [] }) {
    this._rt = rt;
    /** @type {"f32" | "f16"} */
    this.storage = storage;
    this._es = storage === "f16" ? 2 : 4;
    this._plan = plan;
    this._in = ins;
    this._out = outs;
    this.metadata = metadata;
    this.name = name;
    /** @type {"webgpu"} */
    this.backend = "webgpu";
    this.inputs = inputs;
    this.outputs = outputs;
    this._segs = segs;
    this._wasm = wasm;
    this._tensors = tensors;
    /** The wasm segments (fallback "wasm"): their ops and the tensors crossing; empty when all run on the GPU. */
    this.fallback = fallback;
    this._queue = Promise.resolve(); // runs one at a time: they share the arena and the readback buffer
  }

  get labels() { return this.metadata?.labels ?? []; }
  get released() { return !this._arena; }
  /** Dispatches per run, and the convolutions' and dense layers' floating-point operations per run. */
  get dispatches() { return this._plan.dispatches.length; }
  get flops() { return this._plan.flops; }

  async _build() {
    const { device } = this._rt;
    const p = this._plan;
    const limit = device.limits.maxStorageBufferBindingSize;
    const arenaBytes = Math.ceil(p.arenaBytes / 4) * this._es;
    const consts = this.storage === "f16" ? toF16(p.constants) : p.constants;
    for (const [what, size] of [["activation arena", arenaBytes], ["constants", consts.byteLength]]) {
      if (size > limit) {
        throw new WasmrtError(`${this.name}: the ${what} needs ${(size / 2 ** 20).toFixed(0)} MiB, more than this GPU ` +
          `binds in one buffer (${(limit / 2 ** 20).toFixed(0)} MiB)`);
      }
    }
    const pipelines = await Promise.all(p.dispatches.map((d) => this._rt.pipeline(d.kernel, this.storage)));
    this._arena = device.createBuffer({ label: "arena", size: Math.max(16, Math.ceil(arenaBytes / 16) * 16),
      usage: S().STORAGE | S().COPY_DST | S().COPY_SRC });
    this._consts = device.createBuffer({ label: "constants", size: consts.byteLength, usage: S().STORAGE | S().COPY_DST });
    device.queue.writeBuffer(this._consts, 0, consts);
    const blocks = p.dispatches.map((d) => packParams(d.kernel, d.params));
    const offsets = [];
    let size = 0;
    for (const b of blocks) { offsets.push(size); size += Math.ceil(b.length / UNIFORM_ALIGN) * UNIFORM_ALIGN; }
    const ubuf = new Uint8Array(Math.max(size, 16));
    blocks.forEach((b, i) => ubuf.set(b, offsets[i]));
    this._uniforms = device.createBuffer({ label: "params", size: ubuf.length, usage: S().UNIFORM | S().COPY_DST });
    device.queue.writeBuffer(this._uniforms, 0, ubuf);
    this._steps = p.dispatches.map((d, i) => [pipelines[i], device.createBindGroup({
      layout: this._rt._bgl,
      entries: [
        { binding: 0, resource: { buffer: this._arena } },
        { binding: 1, resource: { buffer: this._consts } },
        { binding: 2, resource: { buffer: this._uniforms, offset: offsets[i], size: blocks[i].length } },
      ],
    }), d.groups]);
    const ops = p.dispatches.map((d) => d.op);
    const before = (k) => ops.filter((o) => o < k).length;
    this._parts = this._segs ? this._segs.map((g) => [g, before(g.first), before(g.end)])
      : [[{ wasm: false }, 0, p.dispatches.length]];
    const outBytes = this._out.reduce((s, [, n]) => s + Math.ceil(n / 4) * 4, 0);
    this._readback = device.createBuffer({ label: "outputs", size: Math.max(16, outBytes), usage: S().MAP_READ | S().COPY_DST });
  }

  // Write the inputs (Float32Array from the CPU, GpuTensor copied on the GPU), run every dispatch in one pass, then
  // read the outputs back ([ArrayBuffer per output]) or, with toGpu, copy each into a buffer of its own
  // ([GPUBuffer per output], without waiting for the GPU).
  async _execute(inputs, outs, toGpu = false) {
    const { device } = this._rt;
    let enc = device.createCommandEncoder();
    for (const [off, data] of inputs) {
      if (data instanceof GpuTensor) enc.copyBufferToBuffer(data.buffer, 0, this._arena, off, data.buffer.size);
      else device.queue.writeBuffer(this._arena, off, this._stored(data));
    }
    if (this._wasm) {
      for (const [i, [, data]] of inputs.entries()) this._wasm.input(i, data instanceof GpuTensor ? (await data.read()).data : data);
    }
    for (const [seg, d0, d1] of this._parts) {
      if (seg.wasm) { // the GPU work so far, then this segment on wasm
        device.queue.submit([enc.finish()]);
        await this._runWasm(seg);
        enc = device.createCommandEncoder();
        continue;
      }
      const pass = enc.beginComputePass();
      for (const [pipe, bg, g] of this._steps.slice(d0, d1)) {
        pass.setPipeline(pipe);
        pass.setBindGroup(0, bg);
        pass.dispatchWorkgroups(g[0], g[1], g[2]);
      }
      pass.end();
    }
    if (toGpu) {
      const bufs = outs.map(([off, n]) => {
        const b = device.createBuffer({ label: "output", size: Math.ceil(n / 4) * 4, usage: S().STORAGE | S().COPY_SRC | S().COPY_DST });
        enc.copyBufferToBuffer(this._arena, off, b, 0, b.size);
        return b;
      });
      device.queue.submit([enc.finish()]);
      return bufs;
    }
    let at = 0;
    for (const [off, n] of outs) {
      enc.copyBufferToBuffer(this._arena, off, this._readback, at, Math.ceil(n / 4) * 4);
      at += Math.ceil(n / 4) * 4;
    }
    device.queue.submit([enc.finish()]);
    await this._readback.mapAsync(GPUMapMode.READ);
    const all = this._readback.getMappedRange();
    at = 0;
    const res = outs.map(([, n]) => {
      const b = this.storage === "f16" ? fromF16(all.slice(at, at + Math.ceil(n / 4) * 4), n / 2).buffer : all.slice(at, at + n);
      at += Math.ceil(n / 4) * 4;
      return b;
    });
    this._readback.unmap();
    return res;
  }

  // f32 data as the arena holds it (f16 storage: converted, padded to 4 bytes)
  _stored(data) {
    if (this.storage !== "f16") return data;
    const h = toF16(data);
    if (h.length % 2 === 0) return h;
    const padded = new Uint16Array(h.length + 1);
    padded.set(h);
    return padded;
  }

  _span(t) { return [this._tensors[t].arenaOffset / 4 * this._es, this._tensors[t].size * this._es]; }

  // A wasm segment: the GPU tensors it reads copied in, its ops, the tensors GPU ops and outputs read uploaded.
  async _runWasm(seg) {
    const { device } = this._rt;
    if (seg.toWasm.length) {
      const spans = seg.toWasm.map((t) => this._span(t));
      let size = 0;
      const at = spans.map(([, n]) => { const a = size; size += Math.ceil(n / 4) * 4; return a; });
      const rb = device.createBuffer({ label: "to wasm", size: Math.max(16, size), usage: S().MAP_READ | S().COPY_DST });
      const enc = device.createCommandEncoder();
      spans.forEach(([off, n], i) => enc.copyBufferToBuffer(this._arena, off, rb, at[i], Math.ceil(n / 4) * 4));
      device.queue.submit([enc.finish()]);
      await rb.mapAsync(GPUMapMode.READ);
      const all = rb.getMappedRange();
      seg.toWasm.forEach((t, i) => {
        const count = this._tensors[t].size, raw = all.slice(at[i], at[i] + Math.ceil(spans[i][1] / 4) * 4);
        this._wasm.write(t, this.storage === "f16" ? fromF16(raw, count) : new Float32Array(raw, 0, count));
      });
      rb.unmap();
      rb.destroy();
    }
    this._wasm.run(seg.first, seg.end);
    for (const t of new Set([...seg.toGpu, ...seg.outputs])) {
      device.queue.writeBuffer(this._arena, this._span(t)[0], this._stored(this._wasm.read(t, this._tensors[t].size)));
    }
  }

  /** Run the model: resolves to {outputName: Tensor} (copies on the CPU), or with {outputs: "gpu"} to
   * {outputName: GpuTensor} kept in GPU memory for the next model of this runtime (no readback). Inputs may be
   * GpuTensors of this runtime. */
  run(feeds, options = {}) {
    const where = options.outputs ?? "cpu";
    if (where !== "cpu" && where !== "gpu") {
      return Promise.reject(new InputError(`run(feeds, {outputs}) takes "cpu" or "gpu", not ${JSON.stringify(where)}`));
    }
    const job = this._queue.then(() => this._run(feeds, where === "gpu"));
    this._queue = job.catch(() => {});
    return job;
  }

  async _run(feeds, toGpu) {
    if (this.released) throw new WasmrtError("this model was released");
    const values = feedsInOrder(this.inputs, feeds, this._rt, this.storage);
    const bufs = await this._execute(values.map((v, i) => [this._in[i][0], v]), this._out, toGpu);
    /** @type {Record<string, Tensor | GpuTensor>} */
    const out = {};
    this.outputs.forEach((o, i) => {
      out[o.name] = toGpu ? new GpuTensor(this._rt, bufs[i], o.dtype, o.shape.slice(), this._out[i][1], this.storage)
        : new Tensor(o.dtype, new Float32Array(bufs[i]), o.shape.slice());
    });
    return out;
  }

  /** Free the model's GPU buffers. Further run() calls throw. Safe to call twice. */
  release() {
    this._wasm?.release();
    this._wasm = null;
    for (const k of ["_arena", "_consts", "_uniforms", "_readback"]) {
      this[k]?.destroy();
      this[k] = null;
    }
    this._steps = [];
  }
}

/** A tensor in GPU memory: what run(feeds, {outputs: "gpu"}) gives. Feed it to a model of the same runtime to chain
 * models on the GPU; read() copies it to the CPU; destroy() frees its buffer (it is not freed with the model). */
export class GpuTensor {
  constructor(rt, buffer, dtype, shape, byteLength, storage = "f32") {
    this._rt = rt;
    this.storage = storage;
    this.buffer = buffer;
    this.dtype = dtype;
    this.shape = shape;
    this.byteLength = byteLength;
  }

  get destroyed() { return !this.buffer; }

  /** A CPU copy: resolves to a Tensor. */
  async read() {
    if (!this.buffer) throw new WasmrtError("this GPU tensor was destroyed");
    const { device } = this._rt;
    const rb = device.createBuffer({ label: "read", size: this.buffer.size, usage: S().MAP_READ | S().COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(this.buffer, 0, rb, 0, this.buffer.size);
    device.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const raw = rb.getMappedRange().slice(0, this.buffer.size);
    const data = this.storage === "f16" ? fromF16(raw, this.byteLength / 2) : new Float32Array(raw, 0, this.byteLength / 4);
    rb.unmap();
    rb.destroy();
    return new Tensor(this.dtype, data, this.shape.slice());
  }

  destroy() {
    this.buffer?.destroy();
    this.buffer = null;
  }
}

function feedsInOrder(specs, feeds, rt, storage) {
  const names = specs.map((s) => s.name);
  const single = feeds instanceof Tensor || feeds instanceof GpuTensor || ArrayBuffer.isView(feeds) || (ArrayBuffer.isView(feeds?.data) && !names.includes("data"));
  if (single) {
    if (specs.length !== 1) throw new InputError(`this model has ${specs.length} inputs (${names.join(", ")}): pass {name: tensor}`);
    feeds = { [names[0]]: feeds };
  }
  if (feeds === null || typeof feeds !== "object") throw new InputError("run() takes {inputName: tensor}, a wasmrt.Tensor or a typed array");
  for (const k of Object.keys(feeds)) {
    if (!names.includes(k)) throw new InputError(`unknown input '${k}'; the model's inputs are ${JSON.stringify(names)}`);
  }
  return specs.map((s) => {
    const v = feeds[s.name];
    if (v === undefined || v === null) throw new InputError(`missing input '${s.name}' (${s.dtype} [${s.shape.join(", ")}])`);
    if (v instanceof GpuTensor) {
      if (v.destroyed) throw new InputError(`input '${s.name}': the GPU tensor was destroyed`);
      if (v._rt !== rt) throw new InputError(`input '${s.name}': the GPU tensor belongs to another runtime's device`);
      if (v.storage !== storage) throw new InputError(`input '${s.name}': the GPU tensor is stored as ${v.storage}, this model as ${storage}`);
      if (v.shape.length !== s.shape.length || v.shape.some((d, a) => d !== s.shape[a])) {
        throw new InputError(`input '${s.name}': GPU tensor shape [${v.shape}] does not match the model's [${s.shape.join(", ")}]`);
      }
      return v;
    }
    const data = ArrayBuffer.isView(v) ? v : v.data;
    const shape = ArrayBuffer.isView(v) ? s.shape : (v.shape ?? s.shape);
    if (!(data instanceof Float32Array)) throw new InputError(`input '${s.name}': expected float32 data (a Float32Array)`);
    if (shape.length !== s.shape.length || shape.some((d, a) => d !== s.shape[a])) {
      throw new InputError(`input '${s.name}': shape [${shape}] does not match the model's [${s.shape.join(", ")}]`);
    }
    if (data.length !== s.shape.reduce((a, d) => a * d, 1)) {
      throw new InputError(`input '${s.name}': ${data.length} elements given, shape [${s.shape.join(", ")}] needs more or fewer`);
    }
    return data;
  });
}
