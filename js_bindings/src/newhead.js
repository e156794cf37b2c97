// A new classifier for model.trainer({head: {classes}}), as wasmrt.train(head=...) makes it in Python
// (wasmrt/train/trainer.py new_head): the last trainable layer and what follows it are replaced by a fully connected
// layer "head" (weights "head.weight" [classes, features], "head.bias") on the features that layer read (flattened
// by a RESHAPE "head/flatten" when they are not [batch, features]), giving the output "logits"; the class names
// become the model's labels. Initial weights: uniform in +-1/sqrt(features) drawn by numpy's default_rng(seed)
// (weights, then bias), PyTorch's default for a linear layer. withHead() rewrites the decoded file (./format/writer.js):
// the dropped layers' tensors and constants leave, the new activations go at the end of the arena.

import { InputError, UnsupportedOpError } from "./errors.js";
import { OP_CODES, OPTIONS, DIGEST_PROP } from "./format/generated.js";
import { NumpyRng } from "./numpy_rng.js";
import { MIN_FP16_ELEMENTS, TRAINABLE_OPS } from "./train/constants.js";

const FLOAT32 = 0, FLOAT16 = 1; // enum DType
const optionsId = (name) => OPTIONS.findIndex((o) => o && o[0] === name);

/** The class names of head: {classes}: at least two distinct non-empty strings, or an InputError. */
export function checkClasses(classes) {
  if (!Array.isArray(classes)) throw new InputError(`head.classes must be an array of class names, got ${typeof classes}`);
  if (classes.length < 2) throw new InputError(`head.classes: at least two classes, got ${classes.length}`);
  classes.forEach((c, i) => {
    if (typeof c !== "string" || !c) throw new InputError(`head.classes[${i}] is not a non-empty string (${JSON.stringify(c)})`);
  });
  const dup = classes.find((c, i) => classes.indexOf(c) !== i);
  if (dup !== undefined) throw new InputError(`head.classes names '${dup}' twice`);
  return classes.slice();
}

/** The index of the layer a new head replaces in a readWrt graph: the last CONV_2D / FULLY_CONNECTED / MATMUL with
 * constant float32 weights. */
export function lastTrainable(g) {
  const k = g.ops.findLastIndex((o) => TRAINABLE_OPS.includes(o.op) && g.tensors[o.inputs[1]]?.isConst
    && g.tensors[o.inputs[1]].dtype === "float32");
  if (k < 0) throw new UnsupportedOpError("head: the model has no classifier layer (CONV_2D or FULLY_CONNECTED with "
    + "constant float32 weights) to replace");
  return k;
}

/** Initial weight [classes * features] and bias [classes]: given ones (checked), else seeded as Python draws them. */
export function initialHead(classes, features, { seed = 0, weight, bias } = {}) {
  if (weight !== undefined || bias !== undefined) {
    const w = Float32Array.from(weight ?? []), b = Float32Array.from(bias ?? []);
    if (w.length !== classes * features || b.length !== classes) {
      throw new InputError(`head.weight / head.bias: ${classes * features} and ${classes} values needed `
        + `([${classes}, ${features}] and [${classes}]), got ${w.length} and ${b.length}`);
    }
    if (![...w, ...b].every(Number.isFinite)) throw new InputError("head.weight / head.bias hold NaN or infinity");
    return { weight: w, bias: b };
  }
  if (!Number.isSafeInteger(seed) || seed < 0) throw new InputError(`head.seed must be a non-negative integer, got ${seed}`);
  const rng = new NumpyRng(seed), bound = 1 / Math.sqrt(features);
  return { weight: Float32Array.from(rng.uniform(-bound, bound, classes * features)),
    bias: Float32Array.from(rng.uniform(-bound, bound, classes)) };
}

/** float32 -> float16 bits when the value is exactly a finite float16, else -1. */
function exactHalf(v) {
  if (v === 0) return Object.is(v, -0) ? 0x8000 : 0;
  const s = v < 0 ? 0x8000 : 0, a = Math.abs(v);
  if (!(a <= 65504)) return -1;
  if (a < 2 ** -14) { const m = a * 2 ** 24; return Number.isInteger(m) ? s | m : -1; }
  const e = Math.floor(Math.log2(a));
  const ee = a >= 2 ** (e + 1) ? e + 1 : a < 2 ** e ? e - 1 : e; // log2 may be off by one at powers of two
  const m = (a / 2 ** ee - 1) * 1024;
  return Number.isInteger(m) ? s | ((ee + 15) << 10) | m : -1;
}

/** How the writer stores a float32 constant ("auto"): float16 when every value survives the round trip. */
function stored(data) {
  if (data.length >= MIN_FP16_ELEMENTS) {
    const half = new Uint16Array(data.length);
    if (data.every((v, k) => (half[k] = exactHalf(v)) >= 0)) return { dtype: FLOAT16, bytes: new Uint8Array(half.buffer) };
  }
  return { dtype: FLOAT32, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice() };
}

/** The decoded model (./format/writer.js decodeModel) with layer `last` and what follows replaced by the new head
 * (weight, bias), labels `classes`; props added to the metadata (the stale digest dropped: hosts hash at load). */
export function withHead(tree, last, classes, weight, bias, props = {}) {
  const T = tree.tensors.map((t) => ({ ...t }));
  const data = new Map(); // tensor index -> stored constant bytes
  T.forEach((t, i) => { if (t.buffer > 0 && tree.buffers[t.buffer]?.data?.length) data.set(i, tree.buffers[t.buffer].data); });
  const index = new Map(T.map((t, i) => [t.name, i]));
  const unique = (base) => { let n = base; for (let k = 0; index.has(n); k++) n = `${base}_${k}`; return n; };
  const add = (t) => { // a name already there is replaced in place (the Python graph's dict)
    if (index.has(t.name)) T[index.get(t.name)] = t;
    else { index.set(t.name, T.length); T.push(t); }
    return index.get(t.name);
  };
  const align = tree.plan?.alignment ?? 64;
  let arena = Number(tree.plan?.arena_size ?? 0);
  const place = (bytes) => { const at = Math.ceil(arena / align) * align; arena = at + bytes; return at; };
  const ops = tree.operators.slice(0, last);
  let feats = tree.operators[last].inputs[0];
  const shape = T[feats].shape, batch = shape[0], features = shape.slice(1).reduce((a, d) => a * d, 1);
  if (shape.length !== 2) {
    const out = add({ name: unique("head/flatten:0"), shape: [batch, features], dtype: FLOAT32,
      arena_offset: place(4 * batch * features) });
    ops.push({ type: OP_CODES.RESHAPE, inputs: [feats], outputs: [out], options_type: optionsId("ReshapeOptions"),
      options: { shape: [0, -1] }, name: "head/flatten" });
    feats = out;
  }
  const constant = (name, shp, values) => {
    const s = stored(values);
    const i = add({ name: unique(name), shape: shp, dtype: s.dtype });
    data.set(i, s.bytes);
    return i;
  };
  const w = constant("head.weight", [classes.length, features], weight);
  const b = constant("head.bias", [classes.length], bias);
  const logits = add({ name: "logits", shape: [batch, classes.length], dtype: FLOAT32,
    arena_offset: place(4 * batch * classes.length) });
  ops.push({ type: OP_CODES.FULLY_CONNECTED, inputs: [feats, w, b], outputs: [logits],
    options_type: optionsId("FullyConnectedOptions"), options: {}, name: "head" });
  // what the output no longer needs leaves (wasmrt/compile/ir.py Graph.prune)
  const live = new Set([logits]);
  const kept = [];
  for (const o of ops.slice().reverse()) {
    if (!o.outputs.some((i) => live.has(i))) continue;
    kept.push(o);
    o.inputs.forEach((i) => { if (i >= 0) live.add(i); });
    o.outputs.forEach((i) => live.add(i));
  }
  tree.inputs.forEach((i) => live.add(i));
  const renumber = new Map();
  const tensors = [], buffers = [tree.buffers?.[0] ?? { data: new Uint8Array(0) }];
  T.forEach((t, i) => {
    if (!live.has(i)) return;
    renumber.set(i, tensors.length);
    const nt = { ...t };
    delete nt.buffer;
    if (data.has(i)) { nt.buffer = buffers.length; buffers.push({ data: data.get(i) }); }
    tensors.push(nt);
  });
  const re = (list) => list.map((i) => (i >= 0 ? renumber.get(i) : i));
  const md = tree.metadata ?? {};
  const keptProps = (md.props ?? []).filter((p) => p.key !== DIGEST_PROP && !(p.key in props));
  return {
    ...tree, tensors, buffers,
    operators: kept.reverse().map((o) => ({ ...o, inputs: re(o.inputs), outputs: re(o.outputs) })),
    inputs: re(tree.inputs), outputs: [renumber.get(logits)],
    plan: { ...tree.plan, arena_size: Math.ceil(arena / align) * align },
    metadata: { ...md, labels: classes.slice(),
      props: [...keptProps, ...Object.entries(props).map(([key, value]) => ({ key, value }))] },
  };
}
