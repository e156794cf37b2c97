// One case of the JS trainer of several layers (train: "all" / "last:N"), in Node or Chromium (trainer_node.mjs /
// trainer_browser.mjs): trains on the given batches; returns the trained tensors, the losses, the exported model's
// outputs, the trainer's own logits and the errors.
export async function runCase(wasmrt, c, bytes, x) {
  const rt = await wasmrt.init({ variant: c.variant });
  const model = rt.loadBytes(bytes, { trainable: true });
  const n = c.labels.length, size = x.length / n;
  const sample = (i) => x.slice(i * size, (i + 1) * size);
  const samples = Array.from({ length: n }, (_, i) => sample(i));
  const out = { variant: rt.variant, errors: {} };
  const t = await model.trainer({ train: c.train, optimizer: c.optimizer, lr: c.lr, weightDecay: c.weightDecay });
  const batches = [];
  for (let s = 0; s < n; s += c.batch) {
    const idx = Array.from({ length: Math.min(c.batch, n - s) }, (_, k) => s + k);
    batches.push({ input: idx.map((i) => samples[i]), label: idx.map((i) => c.labels[i]) });
  }
  out.epochLoss = await t.fit(batches, { epochs: c.epochs });
  out.weights = Object.fromEntries(Object.entries(t.weights).map(([k, v]) => [k, Array.from(v)]));
  out.losses = t.history;
  const m2 = rt.loadBytes(t.export());
  out.tunedOutputs = samples.map((s) => Array.from(Object.values(m2.runSync(s))[0].data));
  out.predicted = t.predict(samples).map((z) => Array.from(z));
  t.release();
  for (const [name, fn] of [
    ["badLabel", async () => (await model.trainer({ train: c.train })).step({ input: [samples[0]], label: [99] })],
    ["badLast", () => model.trainer({ train: "last:99" })],
    ["unsupported", async () => rt.loadBytes(new Uint8Array(c.unsupported), { trainable: true }).trainer({ train: "all" })],
  ]) {
    try { await fn(); out.errors[name] = null; } catch (e) { out.errors[name] = { name: e.name, message: e.message }; }
  }
  return out;
}
