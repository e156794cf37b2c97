// The layers' trainer (train: "all" / "last:N" / a layer's name) on one runtime: the page's (wasmrt.init) or a
// Worker's (initWorker: worker_threads, a Web Worker, a mini-program Worker), the same calls awaited on both. Used by
// tests/js/chain_worker_node.mjs and chain_worker_browser.mjs, which run it on the page and in Workers and print
// the results for tests/test_js_chain_worker.py to compare.

const catching = async (fn) => {
  try { await fn(); return null; } catch (e) { return { name: e.name, message: e.message }; }
};

/** Trains the model (bytes) on samples with c's options; returns the losses, progress calls, feature runs, trained
 * tensors, exported file, logits (predict and the reloaded export's), and the errors of bad calls. */
export async function runChainCase(rt, c, bytes, samples) {
  const model = await rt.load(bytes.slice(), { trainable: true });
  const out = { errors: {} };
  const t = await model.trainer({ train: c.train, optimizer: c.optimizer, lr: c.lr, weightDecay: c.weightDecay });
  const batches = [];
  for (let s = 0; s < samples.length; s += c.batch) {
    const idx = Array.from({ length: Math.min(c.batch, samples.length - s) }, (_, k) => s + k);
    // labels by index, every other batch by class name (the model's labels)
    batches.push({ input: idx.map((i) => samples[i]), label: idx.map((i) => (s % 2 ? String(c.labels[i]) : c.labels[i])) });
  }
  let progress = 0;
  out.epochLoss = await t.fit(batches, { epochs: c.epochs, onProgress: () => { progress++; } });
  out.progress = progress;
  out.history = Array.from(t.history);
  out.featureRuns = t.featureRuns;
  out.labels = t.labels;
  out.classes = t.classes;
  out.weights = Object.fromEntries(Object.entries(await t.weights).map(([k, v]) => [k, Array.from(v)]));
  const exported = await t.export();
  out.exported = Array.from(exported);
  out.predicted = (await t.predict(samples.slice(0, c.check))).map((z) => Array.from(z));
  const tuned = await rt.load(exported.slice());
  out.tunedOutputs = [];
  for (const s of samples.slice(0, c.check)) out.tunedOutputs.push(Array.from(Object.values(await tuned.run(s))[0].data));
  out.errors.badLabel = await catching(() => t.step({ input: [samples[0]], label: [99] }));
  out.errors.badName = await catching(() => t.step({ input: [samples[0]], label: ["cat"] }));
  out.errors.count = await catching(() => t.step({ input: [samples[0], samples[1]], label: [0] }));
  out.errors.wrongShape = await catching(() => t.step({ input: [new Float32Array(5)], label: [0] }));
  out.errors.notSample = await catching(() => t.step({ input: [[1, 2, 3]], label: [0] }));
  out.errors.badTrain = await catching(() => model.trainer({ train: "nope" }));
  out.errors.headOption = await catching(() => model.trainer({ train: "all", head: { classes: ["a", "b"] } }));
  out.stepsAfterErrors = t.history.length; // failed steps leave no loss behind
  if (t._port) { // messages the client would never send, straight to the worker's trainer
    const raw = (samples2, label) => catching(() => t._port.call("trainStep", { trainer: t._id, samples: samples2, label }));
    out.raw = { shortBuffer: await raw([{ id: 1e6, data: new ArrayBuffer(6) }], [0]),
      neverSent: await raw([{ id: 1e6 + 1 }], [0]), notList: await raw(7, [0]), junk: await raw([null], [0]),
      badLabel: await raw([{ id: 1e6 + 2, data: new ArrayBuffer(1024) }], [0.5]) };
  }
  await t.release();
  // a learning rate far too high: a TrainingError at the step whose loss is not finite; export() writes the weights
  // when they are finite, and refuses (a TrainingError) when they are not
  out.diverge = [];
  for (const opt of c.diverge) {
    const d = await model.trainer({ train: c.divergeTrain, optimizer: "sgd", ...opt });
    const r = { error: null, steps: 0 };
    for (let k = 0; k < 6 && !r.error; k++) {
      r.error = await catching(() => d.step(batches[0]));
      if (!r.error) r.steps++;
    }
    let dx = null;
    r.exportError = await catching(async () => { dx = await d.export(); });
    r.exported = dx ? Array.from(dx) : null;
    await d.release();
    out.diverge.push(r);
  }
  await model.release();
  return out;
}
