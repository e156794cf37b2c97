// A .wrt model as WebGPU work: packed constants and one dispatch per op (kernel, parameters, grid). The one WebGPU
// planner: the JS backend (backend.js) and the Python engine (wasmrt/engines/webgpu.py, which runs this module under
// Node through plan-cli.mjs) both run these plans. An op without a WGSL kernel, or a tensor that is not float32, is
// refused here with an UnsupportedOpError naming it; with fallback it is listed in plan.wasmOps instead, for the wasm
// engine to run (split.js).
//
// Why here, at load, and not at convert time in the .wrt: a plan is the model seen through one set of kernels (their
// names, parameter layouts, GEMM tiles, workgroup size), which ships with the runtime, not with the model. Stored in
// the file it would tie every .wrt to one kernel release (files converted before a kernel change, or before plans
// existed, could no longer run on WebGPU) and grow every file, most of which never meet a GPU. Here, the plan always
// matches the kernels beside it (kernels.js, the one copy both engines read), and the engine that ships to browsers
// is the one whose plans the Python GPU tests check.

import { UnsupportedOpError } from "../errors.js";
import { KERNELS } from "./kernels.js";

const CONST_ALIGN = 64;
const BINARY = { ADD: "add", SUB: "sub", MUL: "mul", DIV: "div", MAXIMUM: "max", MINIMUM: "min", PRELU: "prelu" };
const UNARY = {
  RELU: "relu", CLIP: "clip", LEAKY_RELU: "leaky_relu", HARD_SWISH: "hard_swish", HARD_SIGMOID: "hard_sigmoid",
  SIGMOID: "sigmoid", TANH: "tanh", EXP: "exp", SQRT: "sqrt", ABS: "abs", NEG: "neg",
};
const REDUCE = { MEAN: "mean", REDUCE_SUM: "sum", REDUCE_MAX: "max" };
const OTHER = ["CONV_2D", "CONV_TRANSPOSE_2D", "FULLY_CONNECTED", "MAX_POOL_2D", "AVERAGE_POOL_2D", "SOFTMAX", "RESHAPE",
  "TRANSPOSE", "CONCATENATION", "SLICE", "PAD", "RESIZE", "DEPTH_TO_SPACE"];
export const SUPPORTED = [...Object.keys(BINARY), ...Object.keys(UNARY), ...Object.keys(REDUCE), ...OTHER];

const RANK = KERNELS.rank;
const prod = (a) => a.reduce((n, d) => n * d, 1);
const strides = (shape) => { const s = []; let m = 1; for (let i = shape.length - 1; i >= 0; i--) { s[i] = m; m *= shape[i]; } return s; };
const pad6 = (v, fill) => [...Array(RANK - v.length).fill(fill), ...v];
const vec = (prefix, v) => Object.fromEntries(v.map((x, k) => [`${prefix}${k}`, x]));
const act = (a) => ({ act_min: a.act_min ?? -Infinity, act_max: a.act_max ?? Infinity });
const NO_ACT = { act_min: -Infinity, act_max: Infinity };

function grid1d(n) {
  const groups = Math.max(1, Math.ceil(n / KERNELS.workgroup));
  const gx = Math.min(groups, 65535);
  return [{ gx, n }, [gx, Math.ceil(groups / gx), 1]];
}

/** The uniform block of a dispatch: the kernel's parameters in layout order (u32 or f32). */
export function packParams(kernel, params) {
  const layout = KERNELS.kernels[kernel].params;
  const words = Math.max(4, Math.ceil(layout.length / 4) * 4);
  const dv = new DataView(new ArrayBuffer(4 * words));
  layout.forEach((p, k) => {
    const [name, kind] = p.split(":");
    const v = params[name] ?? 0;
    if (kind) dv.setFloat32(4 * k, v, true);
    else dv.setUint32(4 * k, Number(BigInt.asUintN(32, BigInt(Math.trunc(v)))), true);
  });
  return new Uint8Array(dv.buffer);
}

class Planner {
  constructor(model, label, fallback = false) {
    this.m = model;
    this.label = label;
    this.fallback = fallback;
    this.wasmOps = new Map(); // op index -> why the GPU cannot run it
    this.chunks = [];
    this.size = 0;
    this.dispatches = [];
    this.flops = 0;
  }

  refuse(k, op, detail) {
    const e = new UnsupportedOpError(`${this.label} (backend webgpu): unsupported op '${op.op}' (node '${op.name || `#${k}`}'): ${detail}`);
    e.detail = detail;
    return e;
  }

  pack(data) {
    const off = this.size;
    this.chunks.push(data);
    const pad = (CONST_ALIGN - (data.length % CONST_ALIGN)) % CONST_ALIGN;
    if (pad) this.chunks.push(new Float32Array(pad));
    this.size += data.length + pad;
    return off;
  }

  t(i) { return this.m.tensors[i]; }
  operand(i) { const t = this.t(i); return t.isConst ? (KERNELS.const_bit | this.pack(t.data)) >>> 0 : t.arenaOffset / 4; }
  act(k, op, i) {
    const t = this.t(i);
    if (t.isConst) throw this.refuse(k, op, `input '${t.name}' is a constant; this backend needs it computed`);
    return t.arenaOffset / 4;
  }
  add(k, kernel, params, groups, flops = 0) {
    this.dispatches.push({ kernel, params, groups, op: k, flops });
    this.flops += flops;
  }

  planOp(k, op) {
    if (!SUPPORTED.includes(op.op)) {
      throw this.refuse(k, op, `no WGSL kernel for ${op.op}; the webgpu backend runs ${[...SUPPORTED].sort().join(", ")}`);
    }
    for (const i of [...op.inputs, ...op.outputs]) {
      if (i >= 0 && this.t(i).dtype !== "float32") {
        throw this.refuse(k, op, `tensor '${this.t(i).name}' is ${this.t(i).dtype}; the webgpu backend runs float32 models`);
      }
    }
    if (op.op in BINARY) this.binary(k, op);
    else if (op.op in UNARY) this.unary(k, op);
    else if (op.op in REDUCE) this.reduceOp(k, op);
    else this[op.op.toLowerCase()](k, op);
  }

  plan() {
    this.m.ops.forEach((op, k) => {
      if (op.outputs.every((i) => this.t(i).shape.includes(0))) return;
      const mark = [this.chunks.length, this.size, this.dispatches.length, this.flops];
      try {
        this.planOp(k, op);
      } catch (e) {
        if (!this.fallback || !(e instanceof UnsupportedOpError)) throw e;
        // the op runs on wasm: drop what it packed or dispatched before the refusal
        this.chunks.length = mark[0];
        this.dispatches.length = mark[2];
        [this.size, this.flops] = [mark[1], mark[3]];
        this.wasmOps.set(k, e.detail);
      }
    });
    const constants = new Float32Array(Math.max(this.size, CONST_ALIGN));
    let at = 0;
    for (const c of this.chunks) { constants.set(c, at); at += c.length; }
    return { constants, dispatches: this.dispatches, arenaBytes: this.m.arenaSize, flops: this.flops, wasmOps: this.wasmOps };
  }

  convCommon(k, op) {
    const [x, w, y] = [this.t(op.inputs[0]), this.t(op.inputs[1]), this.t(op.outputs[0])];
    if (!w.isConst) throw this.refuse(k, op, `weights '${w.name}' are computed at run time; this backend needs constants`);
    const hasB = op.inputs.length > 2 && op.inputs[2] >= 0;
    const hasR = op.inputs.length > 3 && op.inputs[3] >= 0;
    const p = { x: this.act(k, op, op.inputs[0]), y: y.arenaOffset / 4, flags: (hasB ? 1 : 0) | (hasR ? 2 : 0), ...act(op.attrs) };
    if (hasB) p.b = this.pack(this.t(op.inputs[2]).data);
    if (hasR) p.r = this.act(k, op, op.inputs[3]);
    return [p, x, y, w];
  }

  gemm(k, p, m, og, kk, g, direct, flops) {
    const tile = og >= 128 && m >= 1024 ? "128x128" : og >= 48 ? "64x64" : "32x32";
    const [bm, bn] = KERNELS.kernels[`gemm_${tile}`].tile;
    this.add(k, `${direct ? "gemm" : "conv"}_${tile}`, { ...p, M: m, K: kk }, [Math.ceil(og / bn), Math.ceil(m / bm), g], flops);
  }

  conv_2d(k, op) {
    const [p, x, y, w] = this.convCommon(k, op);
    const a = op.attrs;
    const [n, h, wd, ci] = x.shape, [, oh, ow, co] = y.shape, [, kh, kw, cg] = w.shape;
    const g = a.groups, og = co / g;
    const [sh, sw] = a.strides, [dh, dw] = a.dilations, [pt, pl, pb, pr] = a.pads;
    Object.assign(p, { H: h, W: wd, CI: ci, OH: oh, OW: ow, CO: co, KH: kh, KW: kw, cg, og, sh, sw, dh, dw, pt, pl });
    const flops = 2 * n * oh * ow * co * kh * kw * cg;
    if (cg === 1 && g === ci && g > 1) { // depthwise: [co][kh*kw] -> [kh*kw][co]
      const t = new Float32Array(co * kh * kw);
      for (let c = 0; c < co; c++) for (let j = 0; j < kh * kw; j++) t[j * co + c] = w.data[c * kh * kw + j];
      p.w = this.pack(t);
      const [extra, groups] = grid1d(n * oh * ow * co);
      this.add(k, "dwconv", { ...p, ...extra }, groups, flops);
      return;
    }
    const kk = kh * kw * cg; // [G][og][K] -> [G][K][og]
    const t = new Float32Array(co * kk);
    for (let gi = 0; gi < g; gi++) {
      for (let o = 0; o < og; o++) for (let j = 0; j < kk; j++) t[(gi * kk + j) * og + o] = w.data[(gi * og + o) * kk + j];
    }
    p.w = this.pack(t);
    const direct = kh === 1 && kw === 1 && sh === 1 && sw === 1 && pt === 0 && pl === 0 && pb === 0 && pr === 0;
    this.gemm(k, p, n * oh * ow, og, kk, g, direct, flops);
  }

  fully_connected(k, op) {
    const [p, x, , w] = this.convCommon(k, op);
    const [nout, kk] = w.shape;
    const m = prod(x.shape.slice(0, -1));
    const t = new Float32Array(nout * kk);
    for (let o = 0; o < nout; o++) for (let j = 0; j < kk; j++) t[j * nout + o] = w.data[o * kk + j];
    Object.assign(p, { w: this.pack(t), H: 1, W: 1, CI: kk, OH: 1, OW: 1, CO: nout, KH: 1, KW: 1, cg: kk, og: nout,
      sh: 1, sw: 1, dh: 1, dw: 1 });
    this.gemm(k, p, m, nout, kk, 1, true, 2 * m * nout * kk);
  }

  conv_transpose_2d(k, op) {
    const [p, x, y, w] = this.convCommon(k, op);
    const a = op.attrs;
    const [n, h, wd, ci] = x.shape, [, oh, ow, co] = y.shape, [, kh, kw, cg] = w.shape;
    const [sh, sw] = a.strides, [dh, dw] = a.dilations, [pt, pl] = a.pads;
    Object.assign(p, { w: this.pack(w.data), H: h, W: wd, CI: ci, OH: oh, OW: ow, CO: co, KH: kh, KW: kw, cg,
      og: co / a.groups, sh, sw, dh, dw, pt, pl });
    const [extra, groups] = grid1d(n * oh * ow * co);
    this.add(k, "conv_transpose", { ...p, ...extra }, groups, 2 * n * h * wd * co * kh * kw * cg);
  }

  binary(k, op) {
    const y = this.t(op.outputs[0]);
    const r = y.shape.length;
    if (r > RANK) throw this.refuse(k, op, `rank ${r} > ${RANK}`);
    const p = { y: y.arenaOffset / 4, ...act(op.attrs) };
    ["a", "b"].forEach((name, j) => {
      const t = this.t(op.inputs[j]);
      const sh = [...Array(r - t.shape.length).fill(1), ...t.shape];
      const st = strides(sh).map((s, q) => (sh[q] === 1 ? 0 : s));
      p[name] = this.operand(op.inputs[j]);
      Object.assign(p, vec(`s${name}`, pad6(st, 0)));
    });
    Object.assign(p, vec("d", pad6(y.shape, 1)));
    const [extra, groups] = grid1d(prod(y.shape));
    this.add(k, `binary_${BINARY[op.op]}`, { ...p, ...extra }, groups);
  }

  unary(k, op) {
    const a = op.attrs, y = this.t(op.outputs[0]);
    const prm = { CLIP: [a.min, a.max], LEAKY_RELU: [a.alpha, 0], HARD_SIGMOID: [a.alpha, a.beta] }[op.op] ?? [0, 0];
    const [extra, groups] = grid1d(prod(y.shape));
    this.add(k, `unary_${UNARY[op.op]}`, { x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, p0: prm[0], p1: prm[1], ...extra }, groups);
  }

  copy(k, x, y, dims, sx, sy, a = NO_ACT) {
    if (dims.length > RANK) throw this.refuse(k, this.m.ops[k], `rank ${dims.length} > ${RANK}`);
    const [extra, groups] = grid1d(prod(dims));
    this.add(k, "copy", { x, y, ...vec("d", pad6(dims, 1)), ...vec("sx", pad6(sx, 0)), ...vec("sy", pad6(sy, 0)), ...a, ...extra }, groups);
  }

  reshape(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    if (!x.isConst && x.arenaOffset === y.arenaOffset) return; // the planner gave both the same bytes
    const n = prod(y.shape);
    this.copy(k, this.operand(op.inputs[0]), y.arenaOffset / 4, [n], [1], [1]);
  }

  transpose(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const perm = op.attrs.perm.length ? op.attrs.perm : x.shape.map((_, i) => x.shape.length - 1 - i);
    const sx = strides(x.shape);
    this.copy(k, this.operand(op.inputs[0]), y.arenaOffset / 4, y.shape, perm.map((q) => sx[q]), strides(y.shape));
  }

  depth_to_space(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const [n, h, w, c] = x.shape, b = op.attrs.block, co = c / (b * b);
    const [view, perm] = op.attrs.mode === 0 ? [[n, h, w, b, b, co], [0, 1, 3, 2, 4, 5]] : [[n, h, w, co, b, b], [0, 1, 4, 2, 5, 3]];
    const sx = strides(view), dims = perm.map((q) => view[q]);
    this.copy(k, this.operand(op.inputs[0]), y.arenaOffset / 4, dims, perm.map((q) => sx[q]), strides(dims));
  }

  concatenation(k, op) {
    const y = this.t(op.outputs[0]);
    const axis = op.attrs.axis, sy = strides(y.shape);
    let at = 0;
    for (const i of op.inputs) {
      const t = this.t(i);
      this.copy(k, this.operand(i), y.arenaOffset / 4 + at * sy[axis], t.shape, strides(t.shape), sy, act(op.attrs));
      at += t.shape[axis];
    }
  }

  slice(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const sx = strides(x.shape), { starts, steps } = op.attrs;
    const base = starts.reduce((s, b, q) => s + b * sx[q], 0);
    this.copy(k, this.operand(op.inputs[0]) + base, y.arenaOffset / 4, y.shape, steps.map((st, q) => st * sx[q]), strides(y.shape));
  }

  pad(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const r = x.shape.length;
    if (r > RANK) throw this.refuse(k, op, `rank ${r} > ${RANK}`);
    const [extra, groups] = grid1d(prod(y.shape));
    this.add(k, "pad", {
      x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, mode: op.attrs.mode, value: op.attrs.value,
      ...vec("d", pad6(y.shape, 1)), ...vec("e", pad6(x.shape, 1)), ...vec("p", pad6(op.attrs.pads.slice(0, r), 0)),
      ...vec("sx", pad6(strides(x.shape), 0)), ...extra,
    }, groups);
  }

  resize(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const a = op.attrs, [, h, w, c] = x.shape, [, oh, ow] = y.shape;
    const [extra, groups] = grid1d(prod(y.shape));
    this.add(k, "resize", {
      x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, H: h, W: w, C: c, OH: oh, OW: ow, scale_h: a.scales[0],
      scale_w: a.scales[1], mode: a.mode, coord: a.coord, nearest: a.nearest, ...extra,
    }, groups);
  }

  pool(k, op, kind) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const a = op.attrs, [, h, w, c] = x.shape, [, oh, ow] = y.shape;
    const [kh, kw] = a.kernel, [sh, sw] = a.strides, [dh, dw] = a.dilations, [pt, pl, pb, pr] = a.pads;
    if (oh === 1 && ow === 1 && kh === h && kw === w && a.pads.every((v) => v === 0) && a.act_min === -Infinity &&
        a.act_max === Infinity) { // a global pool: a workgroup per output
      this.reduce(k, op, [1, 2], kind === "avg" ? "mean" : "max");
      return;
    }
    const [extra, groups] = grid1d(prod(y.shape));
    this.add(k, `${kind}pool`, {
      x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, H: h, W: w, C: c, OH: oh, OW: ow, KH: kh, KW: kw, sh, sw,
      dh, dw, pt, pl, pb, pr, cip: a.count_include_pad ? 1 : 0, ...act(a), ...extra,
    }, groups);
  }

  max_pool_2d(k, op) { this.pool(k, op, "max"); }
  average_pool_2d(k, op) { this.pool(k, op, "avg"); }

  reduceOp(k, op) {
    const x = this.t(op.inputs[0]), r = x.shape.length;
    if (r > RANK) throw this.refuse(k, op, `rank ${r} > ${RANK}`);
    const axes = op.attrs.axes.length ? op.attrs.axes.map((a) => (a < 0 ? a + r : a)) : x.shape.map((_, i) => i);
    this.reduce(k, op, axes, REDUCE[op.op]);
  }

  reduce(k, op, axes, kind) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const sx = strides(x.shape);
    const kept = x.shape.map((d, q) => (axes.includes(q) ? 1 : d));
    const red = x.shape.map((d, q) => (axes.includes(q) ? d : 1));
    const nout = prod(kept), nred = prod(red), gx = Math.min(nout, 65535);
    this.add(k, `reduce_${kind}`, {
      x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, gx, n: nout, nred, scale: 1 / Math.max(1, nred),
      ...vec("d", pad6(kept, 1)), ...vec("ds", pad6(sx, 0)), ...vec("r", pad6(red, 1)), ...vec("rs", pad6(sx, 0)),
    }, [gx, Math.ceil(nout / gx), 1]);
  }

  softmax(k, op) {
    const [x, y] = [this.t(op.inputs[0]), this.t(op.outputs[0])];
    const r = Math.max(1, x.shape.length), axis = ((op.attrs.axis % r) + r) % r;
    const len = x.shape.length ? x.shape[axis] : 1, inner = prod(x.shape.slice(axis + 1));
    const [extra, groups] = grid1d(prod(x.shape) / Math.max(1, len));
    this.add(k, "softmax", { x: this.operand(op.inputs[0]), y: y.arenaOffset / 4, len, inner, ...extra }, groups);
  }
}

/** The WebGPU plan of a model read by readWrt(): {constants, dispatches, arenaBytes, flops, wasmOps}; with fallback
 * the ops the GPU cannot run are in wasmOps (Map op index -> why) instead of refused. */
export function plan(model, label = "<model>", fallback = false) {
  return new Planner(model, label, fallback).plan();
}
