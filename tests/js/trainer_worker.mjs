// The trainer through the worker client, in Node: on this thread, in a worker_threads Worker (wasmrt/worker) and in
// an emulated WeChat mini-program Worker (hosts/miniprogram-worker.js, tests/js/miniprogram_emulator.mjs), the same
// new head trained on the same batches (SIMD128 everywhere: the mini-program hosts have no relaxed SIMD). Prints
// each one's weights, exported file, feature runs and errors as JSON; tests/test_js_trainer.py compares them.
import { resolve } from "node:path";
import * as wasmrt from "../../js_bindings/src/index.js";
import { initWorker } from "../../js_bindings/src/worker-client.js";
import { miniProgramWorker } from "./miniprogram_worker_app.mjs";
import { readTrainCase } from "./train_case.mjs";

const dir = process.argv[2];
const root = resolve(new URL("../..", import.meta.url).pathname);
const { c, bytes, samples: cut } = readTrainCase(dir);
const samples = cut(), n = samples.length;
const batches = [];
for (let s = 0; s < n; s += c.batch) {
  const idx = Array.from({ length: Math.min(c.batch, n - s) }, (_, k) => s + k);
  batches.push({ input: idx.map((i) => samples[i]), label: idx.map((i) => c.classes[c.labels[i]]) });
}

async function train(model) {
  const t = await model.trainer({ head: { classes: c.classes, seed: c.seed }, train: "head", optimizer: "adam",
    lr: c.lr });
  let progress = 0;
  const epochLoss = await t.fit(batches, { epochs: c.epochs, onProgress: () => { progress++; } });
  const w = await t.weights;
  const out = { epochLoss, progress, history: t.history, featureRuns: t.featureRuns, labels: t.labels,
    weight: Array.from(w.weight), bias: Array.from(w.bias), exported: Array.from(await t.export()), errors: {} };
  for (const [name, fn] of [["badLabel", () => t.step({ input: [samples[0]], label: ["cat"] })],
    ["badClasses", () => model.trainer({ head: { classes: ["a", "a"] } })],
    ["overflow", async () => { // weights pushed past float32's range: export() refuses them
      const d = await model.trainer({ head: { classes: c.classes, seed: c.seed }, optimizer: "sgd", lr: 3e38,
        weightDecay: 1e38 });
      await d.step(batches[0]);
      return d.export();
    }]]) {
    try { await fn(); out.errors[name] = null; } catch (e) { out.errors[name] = { name: e.name, message: e.message }; }
  }
  return out;
}

const result = {};
const rt = await wasmrt.init({ variant: "simd" });
result.thread = await train(rt.loadBytes(bytes, { trainable: true }));
const wrt = await initWorker({ variant: "simd" });
result.worker = { variant: wrt.variant, ...(await train(await wrt.load(bytes, { trainable: true }))) };
wrt.terminate();

const mp = await miniProgramWorker(root);
try {
  result.miniprogram = { variant: mp.rt.variant, host: mp.rt.host,
    ...(await train(await mp.rt.load(bytes.slice().buffer, { trainable: true }))) };
} finally {
  mp.close();
}
console.log(JSON.stringify(result));
process.exit(0);
