// `wasmrt bench --train` in the page (wasmrt/bench/train.py): the digits LeNet trained from scratch by our wasm
// engine (relaxed SIMD, one thread, model.trainer({train: "all"})) with the test accuracy after each epoch, then
// the same network by TF.js's Layers API (model.fit: same initial weights, batch size, Adam, epochs) on each
// backend that trains here; pass after pass. Epoch times by performance.now() around each epoch.
import { NM, script } from "./peer_script.mjs";

const argmax = (z) => z.reduce((best, v, i) => (v > z[best] ? i : best), 0);

function samples(bytes, n) {
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const size = all.length / n;
  return Array.from({ length: n }, (_, i) => all.slice(i * size, (i + 1) * size));
}

async function ours(libs, T, bytes, xtr, xte) {
  const rt = await libs.wasmrt.init({ ...libs.wasmrtOptions, variant: "relaxed", threads: 1 });
  const model = rt.loadBytes(bytes, { trainable: true });
  const t = await model.trainer({ train: "all", optimizer: "adam", lr: T.lr });
  const out = { variant: rt.variant, epoch_ms: [], loss: [], test_accuracy: [] };
  for (const order of T.orders) {
    const batches = [];
    for (let s = 0; s < order.length; s += T.batch) {
      const idx = order.slice(s, s + T.batch);
      batches.push({ input: idx.map((i) => xtr[i]), label: idx.map((i) => T.y_train[i]) });
    }
    const t0 = performance.now();
    const [loss] = await t.fit(batches, { epochs: 1 });
    out.epoch_ms.push(performance.now() - t0);
    out.loss.push(loss);
    const z = t.predict(xte);
    out.test_accuracy.push(z.filter((zi, i) => argmax(zi) === T.y_test[i]).length / xte.length);
  }
  t.release();
  model.release();
  return out;
}

// The .wrt's initial weights as TF.js Layers weights: convolutions OHWI -> HWIO, dense [out, in] -> [in, out]
// (both flatten NHWC, so the first dense layer's rows keep their order).
function tfWeights(tf, graph) {
  const out = [];
  for (const op of graph.ops.filter((o) => o.op === "CONV_2D" || o.op === "FULLY_CONNECTED")) {
    const [w, b] = [graph.tensors[op.inputs[1]], graph.tensors[op.inputs[2]]];
    const wt = tf.tensor(w.data, w.shape);
    out.push(w.shape.length === 4 ? wt.transpose([1, 2, 3, 0]) : wt.transpose([1, 0]), tf.tensor(b.data, b.shape));
  }
  return out;
}

async function tfjs(tf, backend, T, graph, xtr, xte) {
  if (!(await tf.setBackend(backend))) throw new Error(`backend ${backend} did not initialise`);
  await tf.ready();
  const L = tf.layers;
  const [, h, w, c] = graph.tensors[graph.inputs[0]].shape;
  const net = tf.sequential({ layers: [
    L.conv2d({ inputShape: [h, w, c], filters: 8, kernelSize: 3, padding: "same", activation: "relu" }),
    L.maxPooling2d({ poolSize: 2 }),
    L.conv2d({ filters: 16, kernelSize: 3, padding: "same", activation: "relu" }),
    L.maxPooling2d({ poolSize: 2 }),
    L.flatten(),
    L.dense({ units: 64, activation: "relu" }),
    L.dense({ units: 10, activation: "softmax" }), // softmax + cross-entropy: the loss of our logits
  ] });
  net.setWeights(tfWeights(tf, graph));
  net.compile({ optimizer: tf.train.adam(T.lr), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  const x = tf.tensor(concat(xtr), [xtr.length, h, w, c]);
  const y = tf.oneHot(tf.tensor1d(T.y_train, "int32"), 10);
  const epochMs = [];
  let t0 = 0;
  const hist = await net.fit(x, y, { batchSize: T.batch, epochs: T.tf_epochs, shuffle: true, verbose: 0,
    callbacks: { onEpochBegin: () => { t0 = performance.now(); }, onEpochEnd: async () => {
      epochMs.push(performance.now() - t0);
    } } });
  const xt = tf.tensor(concat(xte), [xte.length, h, w, c]);
  const pred = await net.predict(xt).argMax(1).data();
  const acc = pred.filter((p, i) => p === T.y_test[i]).length / xte.length;
  tf.dispose([x, y, xt]);
  net.dispose();
  return { backend: tf.getBackend(), epoch_ms: epochMs, loss: hist.history.loss, test_accuracy: acc };
}

function concat(list) {
  const out = new Float32Array(list.length * list[0].length);
  list.forEach((v, i) => out.set(v, i * v.length));
  return out;
}

export async function runTrain(job, libs, readBytes, progress) {
  const T = job.train;
  const bytes = await readBytes(T.model);
  const xtr = samples(await readBytes(T.x_train), T.y_train.length);
  const xte = samples(await readBytes(T.x_test), T.y_test.length);
  await script(`${NM}/@tensorflow/tfjs/dist/tf.min.js`);
  const tf = globalThis.tf;
  const { readWrt } = await import("/wasmrt/src/format/reader.js");
  const graph = readWrt(bytes);
  const passes = [];
  const total = T.passes * (1 + T.tf_backends.length);
  let done = 0;
  for (let p = 0; p < T.passes; p++) {
    const pass = { ours: await ours(libs, T, bytes, xtr, xte), tfjs: {} };
    await progress({ stage: "round", done: ++done, total });
    for (const backend of T.tf_backends) {
      try {
        pass.tfjs[backend] = await tfjs(tf, backend, T, graph, xtr, xte);
      } catch (e) {
        pass.tfjs[backend] = { error: String(e?.message ?? e) };
      }
      await progress({ stage: "round", done: ++done, total });
    }
    passes.push(pass);
  }
  return { passes, tfjs_version: tf.version?.tfjs ?? tf.version_core ?? "" };
}
