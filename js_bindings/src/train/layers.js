// The trained part of a model as a chain of layers the engine trains (kernels_wasm/engine/train.c): the same
// rules as the Python engine trainer (wasmrt/train/engine_head.py). Anything else is an UnsupportedOpError naming
// the op, before any work.

import { InputError, UnsupportedOpError } from "../errors.js";
import { ACTIVATIONS as ACTIVATION_OPS, POOL_KIND_COUNT_PAD, POOL_KINDS, TRAINABLE_OPS } from "./constants.js";

const TRAINABLE = new Set(TRAINABLE_OPS);
/** Activations with an engine gradient (wrt_train_grad); HARD_SWISH's reads the forward's input. */
export const ACTIVATIONS = new Set(ACTIVATION_OPS);
/** Pooling ops -> their kind in wrt_train_pool's geometry. */
export const POOLS = POOL_KINDS;
const size = (shape) => shape.reduce((a, d) => a * d, 1);

/** Indices of the ops that train: CONV_2D / FULLY_CONNECTED / MATMUL with constant float32 weights. */
export function trainableLayers(g) {
  return g.ops.flatMap((op, k) => (TRAINABLE.has(op.op) && g.tensors[op.inputs[1]]?.isConst
    && g.tensors[op.inputs[1]].dtype === "float32" ? [k] : []));
}

/** The layers `train` names ("all", "last:N" or a layer's name: it and those after it), as op indices. */
export function pickLayers(g, train) {
  const layers = trainableLayers(g);
  if (!layers.length) throw new UnsupportedOpError("the model has no trainable layer (CONV_2D, FULLY_CONNECTED)");
  if (train === "all") return layers;
  const m = /^last:(\d+)$/.exec(String(train));
  if (m) {
    const n = Number(m[1]);
    if (n < 1 || n > layers.length) throw new InputError(`train: "${train}": N must be 1..${layers.length} (the model's trainable layers)`);
    return layers.slice(-n);
  }
  const at = layers.find((k) => g.ops[k].name === train);
  if (at === undefined) {
    throw new InputError(`train: "${train}" is not "all", "head", "last:N" or a trainable layer's name (`
      + layers.map((k) => `'${g.ops[k].name}'`).join(", ") + ")");
  }
  return layers.filter((k) => k >= at);
}

/** The tensor the loss reads: the first output, or the input of the SOFTMAX that makes it. */
export function logitsTensor(g) {
  const out = g.outputs[0];
  const sm = g.ops.find((o) => o.op === "SOFTMAX" && o.outputs.includes(out));
  return sm ? sm.inputs[0] : out;
}

function geometry(g, op, kh, kw, extra) {
  const [oh, ow] = g.tensors[op.outputs[0]].shape.slice(1, 3);
  const a = op.attrs;
  return Int32Array.from([oh, ow, kh, kw, ...a.strides, ...a.dilations, a.pads[0], a.pads[1], ...extra]);
}

/** The ops from `start` to the output as layers: {op, name, w, b (tensor indices), lo, hi, geo, inShape, outShape}
 * (shapes per sample). */
export function chainFrom(g, start, params) {
  const t = g.tensors;
  const logits = logitsTensor(g);
  const layers = [];
  let prev = null;
  for (let k = start; k < g.ops.length; k++) {
    const op = g.ops[k];
    const where = `op ${k} (${op.op} '${op.name}')`;
    const x = op.inputs[0];
    if (prev !== null && x !== prev) {
      throw new UnsupportedOpError(`training: ${where} does not read the previous op's output (the trained layers must be a chain)`);
    }
    const ly = { op: op.op, name: op.name, lo: -Infinity, hi: Infinity, inShape: t[x].shape.slice(1),
      outShape: t[op.outputs[0]].shape.slice(1) };
    const a = op.attrs;
    if (op.op === "FULLY_CONNECTED" || (op.op === "CONV_2D" && op.inputs.filter((i) => i >= 0).length <= 3)) {
      ly.w = op.inputs[1];
      ly.b = op.inputs.length > 2 && op.inputs[2] >= 0 ? op.inputs[2] : -1;
      if (!params.has(ly.w) || (ly.b >= 0 && !params.has(ly.b))) {
        throw new UnsupportedOpError(`training: ${where} is frozen inside the trained layers`);
      }
      if (ly.b >= 0 && (!t[ly.b].isConst || t[ly.b].dtype !== "float32")) {
        throw new UnsupportedOpError(`training: ${where}: its bias is not a float32 constant`);
      }
      [ly.lo, ly.hi] = [a.act_min, a.act_max];
      if (op.op === "CONV_2D") {
        const [, kh, kw] = t[ly.w].shape;
        ly.geo = geometry(g, op, kh, kw, [a.groups]);
      } else if (t[ly.w].shape.length !== 2) {
        throw new UnsupportedOpError(`training: ${where}: weights of shape ${JSON.stringify(t[ly.w].shape)}`);
      }
      layers.push(ly);
    } else if (op.op in POOLS) {
      const [kh, kw] = a.kernel;
      ly.geo = geometry(g, op, kh, kw, op.op === "AVERAGE_POOL_2D"
        ? [a.count_include_pad ? POOL_KIND_COUNT_PAD : POOLS[op.op], a.pads[2], a.pads[3]] : [POOLS[op.op]]);
      layers.push(ly);
      if (a.act_min > -Infinity || a.act_max < Infinity) { // the fused clamp: its gradient is a CLIP's
        layers.push({ op: "CLIP", name: op.name, lo: a.act_min, hi: a.act_max, inShape: ly.outShape, outShape: ly.outShape });
      }
    } else if (ACTIVATIONS.has(op.op)) {
      if (op.op === "CLIP") [ly.lo, ly.hi] = [a.min, a.max];
      layers.push(ly);
    } else if (op.op === "RESHAPE" && t[op.outputs[0]].shape.length === 2) {
      layers.push(ly);
    } else if (op.op === "SOFTMAX" && g.outputs.includes(op.outputs[0]) && x === logits) {
      layers.push(ly);
    } else {
      throw new UnsupportedOpError(`training: ${where} is not supported by the engine trainer (fully connected layers, `
        + "convolutions, pooling, the activations RELU, CLIP, SIGMOID, TANH, HARD_SWISH, a flatten and a final softmax); "
        + "train fewer layers");
    }
    prev = op.outputs[0];
  }
  for (const ly of layers) ly.inSize = size(ly.inShape), ly.outSize = size(ly.outShape);
  return layers;
}

/** The forward of an activation between trained layers, python_ref's formulas (float64, rounded once). */
export function activate(ly, x, y) {
  const n = x.length;
  switch (ly.op) {
    case "RELU": for (let i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0; break;
    case "CLIP": for (let i = 0; i < n; i++) y[i] = Math.min(Math.max(x[i], ly.lo), ly.hi); break;
    case "TANH": for (let i = 0; i < n; i++) y[i] = Math.tanh(x[i]); break;
    case "HARD_SWISH": for (let i = 0; i < n; i++) y[i] = (x[i] * Math.min(Math.max(x[i] + 3, 0), 6)) / 6; break;
    case "SIGMOID":
      for (let i = 0; i < n; i++) {
        const e = Math.exp(-Math.abs(x[i]));
        y[i] = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);
      }
      break;
    default: throw new UnsupportedOpError(`training: no forward for ${ly.op}`);
  }
}
