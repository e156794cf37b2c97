// The WebGPU backend's wasm fallback (load(url, {fallback: "wasm"})): the ops the planner refuses run on the wasm
// engine, which loads the same .wrt beside the GPU copy (its arena follows the file's memory plan, as the GPU arena
// does). The op list is cut into segments of consecutive ops on one side; before a wasm segment the tensors it reads
// that GPU ops computed are read back into wasm memory (wrt_tensor_data), the segment runs (wrt_run_ops), and the
// tensors it computes that GPU ops or the outputs read are uploaded into the GPU arena. Every crossing is in
// model.fallback: never a silent CPU fallback. The same as wasmrt/engines/webgpu_split.py.

import { errorFromCode, WasmrtError } from "../errors.js";

/** The model's ops as segments {first, end, wasm, toWasm, toGpu, outputs} (tensor indices). wasmOps: Map op -> why. */
export function split(model, wasmOps) {
  const producer = new Map(), consumers = new Map();
  model.ops.forEach((op, k) => {
    for (const t of op.outputs) producer.set(t, k);
    for (const t of op.inputs) { if (!consumers.has(t)) consumers.set(t, []); consumers.get(t).push(k); }
  });
  const segs = [];
  for (let k = 0; k < model.ops.length;) {
    const side = wasmOps.has(k);
    let end = k;
    while (end < model.ops.length && wasmOps.has(end) === side) end++;
    if (!side) segs.push({ first: k, end, wasm: false, toWasm: [], toGpu: [], outputs: [] });
    else {
      const ins = new Set(), outs = new Set();
      for (let j = k; j < end; j++) {
        model.ops[j].inputs.forEach((t) => ins.add(t));
        model.ops[j].outputs.forEach((t) => outs.add(t));
      }
      const sorted = (s) => [...s].sort((a, b) => a - b);
      segs.push({
        first: k, end, wasm: true,
        toWasm: sorted(ins).filter((t) => producer.has(t) && producer.get(t) < k && !wasmOps.has(producer.get(t))),
        toGpu: sorted(outs).filter((t) => (consumers.get(t) ?? []).some((c) => c >= end && !wasmOps.has(c))),
        outputs: model.outputs.filter((t) => outs.has(t)),
      });
    }
    k = end;
  }
  return segs;
}

/** The wasm segments as model.fallback reports them: ops (index, type, name, reason) and crossing tensors (names). */
export function report(model, wasmOps, segs, opType) {
  const name = (t) => model.tensors[t].name;
  return Object.freeze(segs.filter((s) => s.wasm).map((s) => Object.freeze({
    first: s.first, end: s.end,
    ops: Array.from({ length: s.end - s.first }, (_, i) => {
      const k = s.first + i, op = model.ops[k];
      return { index: k, type: opType(k), name: op.name, reason: wasmOps.get(k).replaceAll(op.op, opType(k)) };
    }),
    toWasm: s.toWasm.map(name), toGpu: s.toGpu.map(name), outputs: s.outputs.map(name),
  })));
}

/** The wasm engine's copy of the model: tensors by file index, inputs, and ranges of ops. */
export class WasmSide {
  constructor(model) {
    this.model = model;
    this.rt = model._rt;
  }

  _view(t, count) {
    const ex = this.rt._ex, h = this.model._h;
    const at = ex.wrt_tensor_data(h, t) >>> 0, n = ex.wrt_tensor_nbytes(h, t) >>> 0;
    if (!at || n !== 4 * count) {
      throw new WasmrtError(`wasm fallback: tensor ${t} has ${n} bytes in the wasm engine, ${4 * count} in the plan`);
    }
    return new Float32Array(ex.memory.buffer, at, count);
  }

  opType(k) { return this.rt._cstr(this.rt._ex.wrt_op_type(this.model._h, k) >>> 0); }
  input(i, data) { new Float32Array(this.rt._ex.memory.buffer, this.rt._ex.wrt_input_ptr(this.model._h, i) >>> 0, data.length).set(data); }
  write(t, data) { this._view(t, data.length).set(data); }
  read(t, count) { return this._view(t, count).slice(); }

  run(first, end) {
    this.rt._call(() => {
      const code = this.rt._ex.wrt_run_ops(this.model._h, first, end);
      if (code !== 0) throw errorFromCode(code, `wasm fallback, ops [${first}, ${end}): ${this.rt._message()}`);
    });
  }

  release() { this.model.release(); }
}
