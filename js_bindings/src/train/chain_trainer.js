// Training several layers on the wasm engine: model.trainer({train: "all" | "last:N" | a layer's name}). The
// frozen layers (before the first trained one) run in the engine once per sample; the trained chain's forward and
// backward passes (fully connected layers, convolutions of any groups, pooling, activations), softmax cross-entropy
// and the SGD / Adam step are engine calls (kernels_wasm/engine/train.c) in the order of the Python engine trainer
// (wasmrt/train/engine_head.py), python_ref/train's rules. Parameters and optimizer state stay in the module's
// memory between steps; export() writes the tuned weights into a copy of the model file.

import { ERROR_CODES, errorFromCode, InputError, TrainingError, UnsupportedOpError, WasmrtError } from "../errors.js";
import { fitBatches } from "../fit.js";
import { OP_CODES } from "../format/generated.js";
import { readWrt } from "../format/reader.js";
import { ADAM, DEFAULT_LR, DEFAULT_MOMENTUM } from "./constants.js";
import { checkedSample, frozenOutput } from "./frozen.js";
import { checkLabels } from "./labels.js";
import { activate, ACTIVATIONS, chainFrom, pickLayers, POOLS } from "./layers.js";

const EXPORTS = ["wrt_run_ops", "wrt_tensor_data", "wrt_train_dense_forward", "wrt_train_dense_backward",
  "wrt_train_conv_forward", "wrt_train_conv_backward", "wrt_train_pool", "wrt_train_grad",
  "wrt_train_softmax_xent", "wrt_train_sgd", "wrt_train_adam"];
const align = (n) => (n + 15) & ~15;

export class ChainTrainer {
  /** Use model.trainer({train: "all" | "last:N" | name}). */
  constructor(model, bytes, { train = "all", head, optimizer = "adam", lr, momentum = DEFAULT_MOMENTUM, weightDecay = 0 } = {}) {
    const rt = model._rt;
    const missing = EXPORTS.filter((k) => !(k in rt._ex));
    if (missing.length) throw new UnsupportedOpError(`this engine build cannot train these layers (no ${missing.join(", ")})`);
    if (head !== undefined) throw new UnsupportedOpError(`head: a new classifier trains with train: "head"`);
    if (!(optimizer in DEFAULT_LR)) throw new InputError(`optimizer must be "sgd" or "adam", got ${optimizer}`);
    this._model = model;
    this._bytes = bytes;
    const g = readWrt(bytes);
    const chosen = pickLayers(g, train);
    this._start = chosen[0];
    const params = new Set(chosen.flatMap((k) => g.ops[k].inputs.slice(1, 3).filter((i) => i >= 0)));
    this.layers = chainFrom(g, this._start, params);
    const last = this.layers.findLast((ly) => ly.op !== "SOFTMAX");
    if (last.outShape.length !== 1) throw new UnsupportedOpError(`training: the logits have shape [N, ${last.outShape}]; cross-entropy needs [N, classes]`);
    this.classes = last.outSize;
    const names = model.labels ?? [];
    /** Class names (a label may be given by name): the model's labels when there is one per class; else empty. */
    this.labels = names.length === this.classes ? names.slice() : [];
    this._feature = g.ops[this._start].inputs[0];
    this.features = this.layers[0].inSize;
    this._tensors = g.tensors;
    this._opt = { optimizer, lr: lr ?? DEFAULT_LR[optimizer], momentum, weightDecay };
    // resident: each parameter, its gradient and optimizer state; each layer's geometry
    const ex = rt._ex;
    this._params = [...params].sort((a, b) => a - b).map((i) => ({ tensor: i, n: g.tensors[i].size }));
    let bytesNeeded = 0;
    for (const p of this._params) { p.at = bytesNeeded; bytesNeeded += align(16 * p.n); } // p, grad, m, v
    for (const ly of this.layers) if (ly.geo) { ly.geoAt = bytesNeeded; bytesNeeded += align(4 * ly.geo.length); }
    this._res = rt._alloc(bytesNeeded, "the trained parameters");
    new Uint8Array(ex.memory.buffer, this._res, bytesNeeded).fill(0);
    for (const p of this._params) {
      const t = g.tensors[p.tensor];
      new Float32Array(ex.memory.buffer, this._res + p.at, p.n).set(t.data);
      [p.p, p.g, p.m, p.v] = [0, 1, 2, 3].map((j) => this._res + p.at + 4 * j * p.n);
    }
    for (const ly of this.layers) {
      if (ly.geo) new Int32Array(ex.memory.buffer, this._res + ly.geoAt, ly.geo.length).set(ly.geo);
      const byTensor = (i) => this._params.find((p) => p.tensor === i);
      if (ly.w !== undefined) [ly.pw, ly.pb] = [byTensor(ly.w), ly.b >= 0 ? byTensor(ly.b) : null];
    }
    const fc = this.layers.filter((ly) => ly.op === "FULLY_CONNECTED");
    for (const ly of fc) {
      if (g.tensors[ly.w].shape[1] !== ly.inSize) {
        throw new UnsupportedOpError(`training: '${ly.name}' reads ${ly.inSize} values per sample, its weights ${g.tensors[ly.w].shape}`);
      }
    }
    this._work = 0;
    this._cap = 0;
    this._t = 0;
    this._cache = new WeakMap();
    /** Losses of the steps so far. */
    this.history = [];
    /** How many times the frozen layers ran (once per distinct sample). */
    this.featureRuns = 0;
  }

  /** The trained layers' input for one sample: the frozen layers' output (the sample itself for train: "all"). */
  featuresOf(input) {
    this.featureRuns++;
    if (this._start === 0) return checkedSample(this._model, input);
    return frozenOutput(this._model, input, this._start, this._feature, this.features);
  }

  _features(inputs) {
    return inputs.map((x) => {
      let f = this._cache.get(x);
      if (!f) { f = this.featuresOf(x); this._cache.set(x, f); } // frozen layers: once per sample
      return f;
    });
  }

  /** The work block for batches of nb samples: every layer's output, patches, two gradient buffers, scratch. */
  _layout(nb) {
    if (nb <= this._cap) return;
    const rt = this._model._rt;
    if (this._work) rt._ex.wrt_free(this._work);
    this._work = 0;
    const L = {};
    let at = 0;
    const take = (floats) => { const p = at; at += align(4 * Math.max(floats, 1)); return p; };
    let maxAct = this.features, maxCols = 1, maxW = 1;
    L.acts = [take(nb * this.features)];
    L.cols = [];
    for (const ly of this.layers) {
      maxAct = Math.max(maxAct, ly.outSize);
      if (ly.op === "RESHAPE" || ly.op === "SOFTMAX") L.acts.push(L.acts.at(-1));
      else L.acts.push(take(nb * ly.outSize));
      if (ly.pw) maxW = Math.max(maxW, ly.pw.n);
      if (ly.op === "CONV_2D") {
        const cols = nb * ly.outShape[0] * ly.outShape[1] * ly.geo[2] * ly.geo[3] * ly.inShape[2];
        L.cols.push(take(cols));
        maxCols = Math.max(maxCols, cols);
      } else {
        L.cols.push(0);
      }
    }
    L.dcols = take(maxCols);
    L.wt = take(maxW);
    L.g = [take(nb * maxAct), take(nb * maxAct)];
    L.labels = take(nb);
    L.loss = take(1);
    this._work = rt._alloc(at, "a training step");
    this._cap = nb;
    this._L = L;
  }

  _check(code) {
    if (code !== ERROR_CODES.OK) throw errorFromCode(code, this._model._rt._message());
  }

  /** The forward pass of the batch in the work block (its input written): the logits' address. */
  _forward(nb) {
    const ex = this._model._rt._ex, W = this._work, L = this._L, ck = (c) => this._check(c);
    this.layers.forEach((ly, k) => {
      const x = W + L.acts[k], y = W + L.acts[k + 1];
      const [h, w, c] = ly.inShape;
      if (ly.op === "FULLY_CONNECTED") {
        ck(ex.wrt_train_dense_forward(nb, ly.inSize, ly.outSize, x, ly.pw.p, ly.pb ? ly.pb.p : 0, ly.lo, ly.hi, W + L.wt, y));
      } else if (ly.op === "CONV_2D") {
        ck(ex.wrt_train_conv_forward(nb, h, w, c, ly.outShape[2], this._res + ly.geoAt, x, ly.pw.p, ly.pb ? ly.pb.p : 0,
          ly.lo, ly.hi, W + L.cols[k], W + L.wt, y));
      } else if (ly.op in POOLS) {
        ck(ex.wrt_train_pool(nb, h, w, c, this._res + ly.geoAt, x, 0, y));
      } else if (ACTIVATIONS.has(ly.op)) {
        const n = nb * ly.inSize;
        activate(ly, new Float32Array(ex.memory.buffer, x, n), new Float32Array(ex.memory.buffer, y, n));
      }
    });
    return W + L.acts.at(-1);
  }

  /** One step on a batch: {input: one Float32Array per sample (or one sample), label: class index per sample}.
   * Returns {loss}. A bad label is an InputError naming the sample; a loss or gradient that is not finite a
   * TrainingError, the weights left as they were. */
  async step({ input, label }) {
    const inputs = input instanceof Float32Array ? [input] : Array.from(input ?? []);
    const labels = this._labels(label, inputs.length);
    return { loss: this._stepOn(this._features(inputs), labels) };
  }

  /** The labels of a step as class indices (a name is looked up in this.labels), or an InputError. */
  _labels(label, n) { return checkLabels(label, n, this.classes, this.labels); }

  _stepOn(feats, labels) {
    const rt = this._model._rt, ex = rt._ex, nb = feats.length;
    this._layout(nb);
    return rt._call(() => {
      const W = this._work, L = this._L, ck = (c) => this._check(c);
      const xin = new Float32Array(ex.memory.buffer, W + L.acts[0], nb * this.features);
      feats.forEach((v, i) => xin.set(v, i * this.features));
      new Int32Array(ex.memory.buffer, W + L.labels, nb).set(labels);
      const z = this._forward(nb);
      let gi = 0;
      ck(ex.wrt_train_softmax_xent(nb, this.classes, z, W + L.labels, W + L.g[gi], W + L.loss));
      const loss = new Float32Array(ex.memory.buffer, W + L.loss, 1)[0];
      if (!Number.isFinite(loss)) {
        throw new TrainingError(`the loss diverged (${loss}) at step ${this._t + 1}: lower the learning rate `
          + `(lr=${this._opt.lr}) or check the data`);
      }
      for (let k = this.layers.length - 1; k >= 0; k--) {
        const ly = this.layers[k], x = W + L.acts[k], y = W + L.acts[k + 1], g = W + L.g[gi];
        const dx = k === 0 ? 0 : W + L.g[1 - gi];
        const [h, w, c] = ly.inShape;
        if (ly.op === "FULLY_CONNECTED") {
          ck(ex.wrt_train_dense_backward(nb, ly.inSize, ly.outSize, x, ly.pw.p, y, ly.lo, ly.hi, g, dx, ly.pw.g,
            ly.pb ? ly.pb.g : 0));
        } else if (ly.op === "CONV_2D") {
          ck(ex.wrt_train_conv_backward(nb, h, w, c, ly.outShape[2], this._res + ly.geoAt, W + L.cols[k], ly.pw.p, y,
            ly.lo, ly.hi, g, dx ? W + L.dcols : 0, dx, ly.pw.g, ly.pb ? ly.pb.g : 0));
        } else if (ly.op in POOLS) {
          ck(ex.wrt_train_pool(nb, h, w, c, this._res + ly.geoAt, x, g, dx));
        } else if (ACTIVATIONS.has(ly.op)) { // in place
          ck(ex.wrt_train_grad(OP_CODES[ly.op], nb * ly.inSize, ly.op === "HARD_SWISH" ? x : y, g, g, ly.lo, ly.hi));
          continue;
        } else {
          continue; // RESHAPE, SOFTMAX: the gradient unchanged
        }
        if (!dx) break;
        gi = 1 - gi;
      }
      for (const p of this._params) {
        if (new Float32Array(ex.memory.buffer, p.g, p.n).some((v) => !Number.isFinite(v))) {
          throw new TrainingError(`the gradient of '${this._tensors[p.tensor].name}' is not finite at step ${this._t + 1}`);
        }
      }
      this._t++;
      const { optimizer, lr, momentum, weightDecay } = this._opt;
      for (const p of this._params) {
        ck(optimizer === "sgd" ? ex.wrt_train_sgd(p.n, p.p, p.g, p.m, lr, momentum, weightDecay)
          : ex.wrt_train_adam(p.n, p.p, p.g, p.m, p.v, lr, ADAM.b1, ADAM.b2, ADAM.eps, weightDecay, this._t));
      }
      this.history.push(loss);
      return loss;
    });
  }

  /** Epochs over batches ([{input, label}, ...]); onProgress({epoch, step, steps, loss}) after each step. Returns
   * the mean loss of each epoch. */
  fit(batches, options) { return fitBatches(this, batches, options); }

  /** The logits of each sample (one Float32Array of `classes` each) with the current weights. */
  predict(inputs) {
    return this._predictOn(this._features(inputs instanceof Float32Array ? [inputs] : Array.from(inputs)));
  }

  /** predict() on the samples' features (featuresOf's). */
  _predictOn(all) {
    const rt = this._model._rt, ex = rt._ex, out = [];
    const per = Math.max(this._cap, 32);
    for (let s = 0; s < all.length; s += per) {
      const feats = all.slice(s, s + per), nb = feats.length;
      this._layout(nb);
      rt._call(() => {
        const xin = new Float32Array(ex.memory.buffer, this._work + this._L.acts[0], nb * this.features);
        feats.forEach((v, i) => xin.set(v, i * this.features));
        const z = new Float32Array(ex.memory.buffer, this._forward(nb), nb * this.classes);
        for (let i = 0; i < nb; i++) out.push(z.slice(i * this.classes, (i + 1) * this.classes));
      });
    }
    return out;
  }

  /** The trained tensors' current values, by tensor name (copies). */
  get weights() {
    const mem = this._model._rt._ex.memory.buffer;
    return Object.fromEntries(this._params.map((p) => [this._tensors[p.tensor].name, new Float32Array(mem, p.p, p.n).slice()]));
  }

  /** The tuned model: a copy of the file with the trained layers' new weights (rt.load(tuned) runs it). Weights
   * that are no longer finite (a learning rate far too high) are a TrainingError: such a model is never written. */
  export() {
    const out = this._bytes.slice();
    const mem = this._model._rt._ex.memory.buffer;
    for (const p of this._params) {
      const t = this._tensors[p.tensor];
      if (t.dataOffset < 0 || t.dataBytes !== 4 * p.n) throw new WasmrtError(`tensor '${t.name}' is not stored as float32`);
      if (new Float32Array(mem, p.p, p.n).some((v) => !Number.isFinite(v))) {
        throw new TrainingError(`'${t.name}' is not finite after step ${this._t}: lower the learning rate (lr=${this._opt.lr})`);
      }
      out.set(new Uint8Array(mem, p.p, 4 * p.n), t.dataOffset);
    }
    return out;
  }

  /** Gives the module's memory for the parameters and the work block back. */
  release() {
    const ex = this._model._rt._ex;
    if (this._work) ex.wrt_free(this._work);
    if (this._res) ex.wrt_free(this._res);
    this._work = this._res = 0;
    this._cap = 0;
  }
}
