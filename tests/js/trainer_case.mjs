// One JS trainer case, in Node (trainer_node.mjs) or Chromium (trainer_browser.mjs): trains a model's classifier on
// the given batches; returns the weights, the losses, the exported model's outputs and the errors.
export async function runCase(wasmrt, c, bytes, x) {
  if (c.classes) return runHeadCase(wasmrt, c, bytes, x);
  const rt = await wasmrt.init({ variant: c.variant });
  const model = rt.loadBytes(bytes, { trainable: true });
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
  const m2 = rt.loadBytes(t.export());
  out.tunedOutputs = Array.from({ length: n }, (_, i) => Array.from(Object.values(m2.runSync(sample(i)))[0].data));
  for (const [name, fn] of [
    ["badLabel", () => t.step({ input: [sample(0)], label: [t.classes] })],
    ["diverged", async () => {
      const bad = await model.trainer({ optimizer: "sgd", lr: 1e10 });
      const big = [sample(0), sample(1)].map((s) => s.map((v) => v * 1e20)); // logits overflow after one step
      for (let k = 0; k < 4; k++) await bad.step({ input: big, label: [0, 1] });
    }],
    ["notTrainable", () => rt.loadBytes(bytes).trainer()],
  ]) {
    try { await fn(); out.errors[name] = null; } catch (e) { out.errors[name] = { name: e.name, message: e.message }; }
  }
  return out;
}

// A new head (model.trainer({head: {classes, seed}})): its exported file before and after training, the trained
// weights, the tuned model's outputs and labels, numpy's draws for the seed, and the hostile inputs' errors.
export async function runHeadCase(wasmrt, c, bytes, x) {
  const { NumpyRng } = await import("../../js_bindings/src/numpy_rng.js");
  const rt = await wasmrt.init({ variant: c.variant });
  const model = rt.loadBytes(bytes, { trainable: true });
  const n = c.labels.length, size = x.length / n;
  const sample = (i) => x.slice(i * size, (i + 1) * size);
  const out = { variant: rt.variant, errors: {}, rng: Array.from(new NumpyRng(c.seed).uniform(-1, 1, 8)) };
  const head = { classes: c.classes, seed: c.seed };
  const t = await model.trainer({ head, train: "head", optimizer: c.optimizer, lr: c.lr, weightDecay: c.weightDecay });
  out.initial = Array.from(t.export());
  const batches = [];
  for (let s = 0; s < n; s += c.batch) {
    const idx = Array.from({ length: Math.min(c.batch, n - s) }, (_, k) => s + k);
    // labels by class name and by index, mixed
    batches.push({ input: idx.map(sample), label: idx.map((i) => (i % 2 ? c.classes[c.labels[i]] : c.labels[i])) });
  }
  out.epochLoss = await t.fit(batches, { epochs: c.epochs });
  out.weight = Array.from(t.weights.weight);
  out.bias = Array.from(t.weights.bias);
  const tuned = t.export();
  out.tuned = Array.from(tuned);
  const m2 = rt.loadBytes(tuned);
  out.tunedLabels = m2.labels;
  out.tunedOutputs = Array.from({ length: n }, (_, i) => Array.from(Object.values(m2.runSync(sample(i)))[0].data));
  const given = await model.trainer({ head: { classes: ["p", "q"], weight: new Float32Array(2 * t.features).fill(0.5),
    bias: [1, -1] } });
  out.given = { weight: Array.from(new Set(given.weights.weight)), bias: Array.from(given.weights.bias) };
  for (const [name, fn] of [
    ["empty", () => model.trainer({ head: { classes: [] } })],
    ["one", () => model.trainer({ head: { classes: ["a"] } })],
    ["duplicate", () => model.trainer({ head: { classes: ["a", "b", "a"] } })],
    ["notString", () => model.trainer({ head: { classes: ["a", 3] } })],
    ["notArray", () => model.trainer({ head: { classes: "ab" } })],
    ["badWeight", () => model.trainer({ head: { classes: ["a", "b"], weight: [1, 2], bias: [0, 0] } })],
    ["badName", () => t.step({ input: [sample(0)], label: ["cat"] })],
    ["badIndex", () => t.step({ input: [sample(0)], label: [c.classes.length] })],
  ]) {
    try { await fn(); out.errors[name] = null; } catch (e) { out.errors[name] = { name: e.name, message: e.message }; }
  }
  return out;
}
