// Fine-tuning a model's classifier on the wasm engine: model.trainer({train: "head"}). The frozen layers run in the
// engine once per sample (the ops before the classifier, the feature tensor read from the arena); the classifier's
// forward, softmax cross-entropy, backward and the SGD / Adam step are engine calls (kernels_wasm/engine/train.c,
// python_ref/train's rules). export() writes the tuned weights into a copy of the model file, where the format
// reader found them: the result loads and runs on every engine. head: {classes} trains a new classifier instead
// (./newhead.js), written into a rewritten file (./format/writer.js).

import { ERROR_CODES, errorFromCode, InputError, TrainingError, UnsupportedOpError, WasmrtError } from "./errors.js";
import { readWrt } from "./format/reader.js";
import { decodeModel, encodeModel } from "./format/writer.js";
import { fitBatches } from "./fit.js";
import { checkClasses, initialHead, lastTrainable, withHead } from "./newhead.js";
import { ADAM, DEFAULT_LR, DEFAULT_MOMENTUM } from "./train/constants.js";
import { frozenOutput } from "./train/frozen.js";
import { checkLabels } from "./train/labels.js";

const TRAIN_EXPORTS = ["wrt_run_ops", "wrt_tensor_data", "wrt_train_dense_forward", "wrt_train_dense_backward",
  "wrt_train_softmax_xent", "wrt_train_sgd", "wrt_train_adam"];

export class Trainer {
  /** Use model.trainer(options). */
  constructor(model, bytes, { train = "head", head, optimizer = "adam", lr, momentum = DEFAULT_MOMENTUM, weightDecay = 0 } = {}) {
    const rt = model._rt;
    const missing = TRAIN_EXPORTS.filter((k) => !(k in rt._ex));
    if (missing.length) throw new UnsupportedOpError(`this engine build cannot train (no ${missing.join(", ")})`);
    if (train !== "head") throw new UnsupportedOpError(`train: "${train}": the JS trainer trains the head (the last layer)`);
    if (!(optimizer in DEFAULT_LR)) throw new InputError(`optimizer must be "sgd" or "adam", got ${optimizer}`);
    this._model = model;
    this._bytes = bytes;
    const g = readWrt(bytes);
    if (head !== undefined) this._newHead(g, head);
    else this._ownHead(g);
    this._opt = { optimizer, lr: lr ?? DEFAULT_LR[optimizer], momentum, weightDecay };
    this._state = [this._w, this._b].filter(Boolean).map((p) => [new Float32Array(p.length),
      new Float32Array(p.length)]);
    this._t = 0;
    this._cache = new WeakMap(); // by sample object: dropped with the sample
    /** Losses of the steps so far. */
    this.history = [];
    /** How many times the frozen layers ran (once per distinct sample). */
    this.featureRuns = 0;
  }

  /** The model's own classifier: its last fully connected layer, followed only by SOFTMAX / RESHAPE. */
  _ownHead(g) {
    const k = g.ops.findLastIndex((o) => o.op === "FULLY_CONNECTED" && g.tensors[o.inputs[1]].isConst);
    if (k < 0) throw new UnsupportedOpError("the model has no fully connected classifier with constant weights");
    const op = g.ops[k];
    const later = g.ops.slice(k + 1);
    if (later.some((o) => o.op !== "SOFTMAX" && o.op !== "RESHAPE")) {
      throw new UnsupportedOpError(`ops after the classifier '${op.name}' other than SOFTMAX / RESHAPE: `
        + later.map((o) => o.op).join(", "));
    }
    const [x, w, b] = op.inputs.map((i) => (i >= 0 ? g.tensors[i] : null));
    if (x.isConst || w.dtype !== "float32" || w.shape.length !== 2 || (b && b.dtype !== "float32")) {
      throw new UnsupportedOpError(`classifier '${op.name}': float32 weights [classes, features] needed`);
    }
    this._op = k;
    this._feature = op.inputs[0];
    [this.classes, this.features] = w.shape;
    const names = this._model.labels ?? [];
    /** Class names (a label may be given by name): the new head's classes, or the model's labels. */
    this.labels = names.length === this.classes ? names.slice() : [];
    this._wt = w;
    this._bt = b;
    this._w = w.data.slice();
    this._b = b ? b.data.slice() : null;
    this._clamp = [op.attrs.act_min ?? -Infinity, op.attrs.act_max ?? Infinity];
  }

  /** A new classifier (head: {classes, seed} or {classes, weight, bias}) on the features the last trainable layer
   * reads: ./newhead.js, as Python's wasmrt.train(head=...) makes it. */
  _newHead(g, head) {
    if (!head || typeof head !== "object") throw new InputError("head: {classes: [names], seed} expected");
    this.labels = checkClasses(head.classes);
    const k = lastTrainable(g);
    const x = g.tensors[g.ops[k].inputs[0]];
    if (x.isConst) throw new UnsupportedOpError(`head: layer '${g.ops[k].name}' reads a constant`);
    this._op = k;
    this._feature = g.ops[k].inputs[0];
    this.classes = this.labels.length;
    this.features = x.shape.slice(1).reduce((a, d) => a * d, 1);
    const { weight, bias } = initialHead(this.classes, this.features, head);
    this._head = true;
    this._w = weight;
    this._b = bias;
    this._clamp = [-Infinity, Infinity];
  }

  /** The features of one sample (its input as a Float32Array of the model input's size): the frozen layers' output,
   * computed by the engine. */
  featuresOf(input) {
    this.featureRuns++;
    return frozenOutput(this._model, input, this._op, this._feature, this.features);
  }

  /** One step on a batch: {input: one Float32Array per sample (or one sample), label: class index per sample}.
   * Returns {loss}. A label outside 0..classes-1 is an InputError; a loss that is not finite a TrainingError (the
   * weights are left as they were before the step). */
  async step({ input, label }) {
    const inputs = input instanceof Float32Array ? [input] : Array.from(input ?? []);
    const labels = this._labels(label, inputs.length);
    const feats = inputs.map((x) => {
      let f = this._cache.get(x);
      if (!f) { f = this.featuresOf(x); this._cache.set(x, f); } // frozen layers: once per sample
      return f;
    });
    return { loss: this._stepOn(feats, labels) };
  }

  /** Epochs over batches ([{input, label}, ...]); onProgress({epoch, step, steps, loss}) after each step. Returns
   * the mean loss of each epoch. */
  fit(batches, options) { return fitBatches(this, batches, options); }

  /** The labels of a step as class indices (a name is looked up in this.labels), or an InputError. */
  _labels(label, n) { return checkLabels(label, n, this.classes, this.labels); }

  _stepOn(feats, labels) {
    const rt = this._model._rt, ex = rt._ex;
    const nb = feats.length, f = this.features, c = this.classes;
    const floats = { x: nb * f, w: c * f, b: c, wt: c * f, z: nb * c, dz: nb * c, dw: c * f, db: c, loss: 1 };
    const lay = {};
    let total = 0;
    for (const [k, n] of Object.entries(floats)) { lay[k] = total; total += 4 * Math.max(n, 1); }
    const stateBytes = this._state.reduce((a, [m]) => a + 8 * m.length, 0);
    const base = rt._alloc(total + 4 * nb + stateBytes, "a training step");
    try {
      return rt._call(() => {
        const F = (k, n = floats[k]) => new Float32Array(ex.memory.buffer, base + lay[k], n);
        const check = (code) => { if (code !== ERROR_CODES.OK) throw errorFromCode(code, rt._message()); };
        feats.forEach((v, i) => F("x").set(v, i * f));
        F("w").set(this._w);
        if (this._b) F("b").set(this._b);
        const lab = base + total;
        new Int32Array(ex.memory.buffer, lab, nb).set(labels);
        const [lo, hi] = this._clamp;
        check(ex.wrt_train_dense_forward(nb, f, c, base + lay.x, base + lay.w, this._b ? base + lay.b : 0, lo, hi,
          base + lay.wt, base + lay.z));
        check(ex.wrt_train_softmax_xent(nb, c, base + lay.z, lab, base + lay.dz, base + lay.loss));
        const loss = F("loss")[0];
        if (!Number.isFinite(loss)) {
          throw new TrainingError(`the loss diverged (${loss}) at step ${this._t + 1}: lower the learning rate `
            + `(lr=${this._opt.lr}) or check the data`);
        }
        check(ex.wrt_train_dense_backward(nb, f, c, base + lay.x, base + lay.w, base + lay.z, lo, hi, base + lay.dz, 0,
          base + lay.dw, this._b ? base + lay.db : 0));
        const grads = [F("dw"), ...(this._b ? [F("db")] : [])];
        if (grads.some((g) => g.some((v) => !Number.isFinite(v)))) {
          throw new TrainingError(`a gradient is not finite at step ${this._t + 1}`);
        }
        this._t++;
        const { optimizer, lr, momentum, weightDecay } = this._opt;
        let s = lab + 4 * nb;
        [this._w, this._b].filter(Boolean).forEach((p, i) => {
          const [m, v] = this._state[i];
          const pp = base + (i === 0 ? lay.w : lay.b), n = p.length, g = base + (i === 0 ? lay.dw : lay.db);
          new Float32Array(ex.memory.buffer, s, n).set(m);
          new Float32Array(ex.memory.buffer, s + 4 * n, n).set(v);
          check(optimizer === "sgd" ? ex.wrt_train_sgd(n, pp, g, s, lr, momentum, weightDecay)
            : ex.wrt_train_adam(n, pp, g, s, s + 4 * n, lr, ADAM.b1, ADAM.b2, ADAM.eps, weightDecay, this._t));
          m.set(new Float32Array(ex.memory.buffer, s, n));
          v.set(new Float32Array(ex.memory.buffer, s + 4 * n, n));
          p.set(new Float32Array(ex.memory.buffer, pp, n));
          s += 8 * n;
        });
        this.history.push(loss);
        return loss;
      });
    } finally {
      ex.wrt_free(base);
    }
  }

  /** The tuned model: a copy of the file with the classifier's new weights, or with the new head (rt.load(tuned)
   * runs it on every engine). Weights that are no longer finite are a TrainingError: such a model is never written. */
  export() {
    if ([this._w, this._b].some((p) => p?.some((v) => !Number.isFinite(v)))) {
      throw new TrainingError(`the classifier is not finite after step ${this._t}: lower the learning rate (lr=${this._opt.lr})`);
    }
    if (this._head) {
      const note = { "wasmrt.train": `head, ${this._opt.optimizer}, ${this._t} steps` };
      return encodeModel(withHead(decodeModel(this._bytes), this._op, this.labels, this._w, this._b, note));
    }
    const out = this._bytes.slice();
    for (const [t, data] of [[this._wt, this._w], [this._bt, this._b]]) {
      if (!t) continue;
      if (t.dataOffset < 0 || t.dataBytes !== 4 * data.length) throw new WasmrtError(`tensor '${t.name}' is not stored as float32`);
      new Uint8Array(out.buffer, out.byteOffset + t.dataOffset, t.dataBytes).set(new Uint8Array(data.buffer, data.byteOffset, t.dataBytes));
    }
    return out;
  }

  /** The classifier's current weights [classes * features] and bias (copies). */
  get weights() { return { weight: this._w.slice(), bias: this._b ? this._b.slice() : null }; }
}
