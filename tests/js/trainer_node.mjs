// The JS trainer in Node (tests/test_js_trainer.py writes the case): trains a model's classifier on the given
// batches, prints the weights, the losses, the exported model's outputs and the errors as JSON.
import { readFileSync } from "node:fs";
import * as wasmrt from "../../js_bindings/src/index.js";

const dir = process.argv[2];
const c = JSON.parse(readFileSync(`${dir}/case.json`, "utf8"));
const f32 = (name) => { const b = readFileSync(`${dir}/${name}`); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
const rt = await wasmrt.init({ variant: c.variant });
const bytes = new Uint8Array(readFileSync(`${dir}/model.wrt`));
const model = rt.loadBytes(bytes);
const x = f32("x.bin");
const n = c.labels.length, size = x.length / n;
const sample = (i) => x.slice(i * size, (i + 1) * size);
const out = { variant: rt.variant, errors: {} };
const t = await model.trainer({ train: "head", optimizer: c.optimizer, lr: c.lr, weightDecay: c.weightDecay });
const batches = [];
for (let s = 0; s < n; s += c.batch) {
  const idx = Array.from({ length: Math.min(c.batch, n - s) }, (_, k) => s + k);
  batches.push({ input: idx.map(sample), label: idx.map((i) => c.labels[i]) });
}
let progress = 0;
out.epochLoss = await t.fit(batches, { epochs: c.epochs, onProgress: () => { progress++; } });
out.progress = progress;
out.weight = Array.from(t.weights.weight);
out.bias = Array.from(t.weights.bias ?? []);
out.losses = t.history;
const tuned = t.export();
const m2 = rt.loadBytes(tuned);
out.tunedOutputs = Array.from({ length: n }, (_, i) => Array.from(Object.values(m2.runSync(sample(i)))[0].data));
for (const [name, fn] of [
  ["badLabel", () => t.step({ input: [sample(0)], label: [t.classes] })],
  ["diverged", async () => {
    const bad = await model.trainer({ optimizer: "sgd", lr: 1e10 });
    const big = [sample(0), sample(1)].map((s) => s.map((v) => v * 1e20)); // logits overflow after one step
    for (let k = 0; k < 4; k++) await bad.step({ input: big, label: [0, 1] });
  }],
  ["newHead", () => model.trainer({ head: { classes: ["a", "b"] } })],
]) {
  try { await fn(); out.errors[name] = null; } catch (e) { out.errors[name] = { name: e.name, message: e.message }; }
}
console.log(JSON.stringify(out));
