// Transfer learning in headless Chromium (Debian's chromium through playwright-core, tools/case_page.mjs), for
// tools/transfer_acceptance.py: the page loads the model, turns the uint8 crops into inputs, trains a new head with
// model.trainer({head}) on the batches of the case's plan, exports the tuned model, reloads it and classifies the
// test crops. Prints the result (times, losses, weights, predictions) as one JSON line.
//   node tools/transfer_chromium.mjs <case folder: case.json, model.wrt, train.u8, test.u8>
import { resolve } from "node:path";
import { printCaseResult } from "./case_page.mjs";

const dir = process.argv[2];
const root = resolve(new URL("..", import.meta.url).pathname);
await printCaseResult({ root, dir, title: "transfer" }, (page) => page.evaluate(async () => {
  const wasmrt = await import("/js_bindings/src/index.js");
  const get = async (p) => new Uint8Array(await (await fetch(p)).arrayBuffer());
  const c = JSON.parse(new TextDecoder().decode(await get("/case/case.json")));
  const [modelBytes, trainU8, testU8] = await Promise.all(["model.wrt", "train.u8", "test.u8"].map((f) => get(`/case/${f}`)));
  const ms = {};
  let t = performance.now();
  const lap = (k) => { const now = performance.now(); ms[k] = now - t; t = now; };
  const start = t;
  const rt = await wasmrt.init({ variant: c.variant });
  const model = rt.loadBytes(modelBytes, { trainable: true });
  lap("load");
  // (pixel - 127) / 128 in the model's layout: the same float32 values as photo_classes.to_input
  const s = c.size, hw = s * s;
  const toInput = (u8, i) => {
    const x = new Float32Array(3 * hw), base = i * 3 * hw;
    for (let p = 0; p < hw; p++) {
      for (let ch = 0; ch < 3; ch++) {
        x[c.layout === "NCHW" ? ch * hw + p : 3 * p + ch] = (u8[base + 3 * p + ch] - 127) / 128;
      }
    }
    return x;
  };
  const train = Array.from({ length: c.trainLabels.length }, (_, i) => toInput(trainU8, i));
  const test = Array.from({ length: c.testLabels.length }, (_, i) => toInput(testU8, i));
  lap("preprocess");
  const tr = await model.trainer({ head: { classes: c.classes, seed: c.seed }, train: "head", optimizer: c.optimizer,
    lr: c.lr, weightDecay: c.weightDecay });
  const epochLoss = [];
  for (const [e, order] of c.plan.entries()) {
    const batches = order.map((idx) => ({ input: idx.map((i) => train[i]), label: idx.map((i) => c.classes[c.trainLabels[i]]) }));
    epochLoss.push(...await tr.fit(batches, { epochs: 1 }));
    if (e === 0) lap("firstEpoch"); // with every training sample's features, computed once
  }
  lap("laterEpochs");
  const tuned = tr.export();
  lap("export");
  const m2 = rt.loadBytes(tuned);
  lap("reload");
  const predictions = test.map((x) => {
    const y = Object.values(m2.runSync(x))[0].data;
    let best = 0;
    for (let k = 1; k < y.length; k++) if (y[k] > y[best]) best = k;
    return best;
  });
  lap("test");
  ms.total = performance.now() - start;
  const correct = predictions.filter((p, i) => p === c.testLabels[i]).length;
  const w = tr.weights;
  return { variant: rt.variant, ms, epochLoss, featureRuns: tr.featureRuns, predictions,
    accuracy: correct / predictions.length, labels: m2.labels, exportedBytes: tuned.length,
    weight: Array.from(w.weight), bias: Array.from(w.bias) };
}));
