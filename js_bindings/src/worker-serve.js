// The worker side of wasmrt's worker protocol (./worker-client.js): one runtime per Worker, driven by messages
// {id, op, args}, answered {id, ok, result | error}. For any message port: ./worker.js (Web Worker, worker_threads)
// and ../hosts/miniprogram-worker.js (a mini-program Worker). Trainers live here too, the same classes as on the
// page (../trainer.js for train: "head", ./train/chain_trainer.js for "all" / "last:N" / a layer), driven through
// their featuresOf / _labels / _stepOn: each sample's features are computed once, kept by the sample's id (the
// client sends a sample's data the first time only).

import { InputError } from "./errors.js";

const models = new Map();
const trainers = new Map();
let runtime = null;
let next = 1;

const summary = (m) => ({ inputs: m.inputs, outputs: m.outputs, metadata: m.metadata, name: m.name });

/** An answer with the buffers to transfer (hosts that copy every message ignore the list). */
class Transfer { constructor(result, buffers) { this.result = result; this.buffers = buffers; } }

function need() {
  if (!runtime) throw new Error("the worker runtime is not initialized");
  return runtime;
}

function get(map, id, what) {
  const v = map.get(id);
  if (!v) throw new Error(`no ${what} #${id} in this worker (released?)`);
  return v;
}

const trainerInfo = (id, t) => ({ id, classes: t.classes, labels: t.labels, features: t.features });

/** The features of samples [{id, data?}] (data: an ArrayBuffer of float32 the first time a sample is sent), computed
 * by the trainer once per id; a sample that is not float32 data of the input's size fails there as on the page. */
function featuresOf({ t, features }, samples) {
  return samples.map((s) => {
    const { id, data } = s ?? {};
    let f = features.get(id);
    if (!f) {
      if (data === undefined) throw new InputError(`sample #${id} was never sent to this worker`);
      const ok = data instanceof ArrayBuffer && data.byteLength % 4 === 0;
      f = t.featuresOf(ok ? new Float32Array(data) : data);
      features.set(id, f);
    }
    return f;
  });
}

/** Float32Arrays that own their buffer, in a value or an object of them: their buffers, transferred back. */
const buffersOf = (v) => [v].concat(v instanceof Float32Array ? [] : Object.values(v ?? {}))
  .filter((a) => a instanceof Float32Array && a.byteLength === a.buffer.byteLength).map((a) => a.buffer);

function makeOps(init) {
  return {
    async init(options) {
      runtime = await init(options);
      return { variant: runtime.variant, reason: runtime.reason, features: runtime.features, host: runtime.host,
        threads: runtime.threads };
    },
    async load({ source, name, maxMemory, maxWork, sparse, conv, trainable }) {
      const model = await need().load(source, { name, maxMemory, maxWork, sparse, conv, trainable });
      const id = next++;
      models.set(id, model);
      return { id, ...summary(model) };
    },
    run({ model, feeds }) {
      const out = get(models, model, "model").runSync(feeds);
      const plain = {};
      for (const [k, t] of Object.entries(out)) plain[k] = { dtype: t.dtype, data: t.data, shape: t.shape };
      return new Transfer(plain, Object.values(out).map((t) => t.data.buffer));
    },
    release({ model }) {
      for (const [id, e] of trainers) if (e.model === model) { e.t.release?.(); trainers.delete(id); }
      models.get(model)?.release();
      models.delete(model);
    },
    stats() {
      return { memoryBytes: need().memoryBytes, models: models.size };
    },
    async trainer({ model, options }) {
      const t = await get(models, model, "model").trainer(options);
      const id = next++;
      trainers.set(id, { model, t, features: new Map() });
      return trainerInfo(id, t);
    },
    // samples: [{id, data?: ArrayBuffer of float32}]: data the first time a sample is sent; labels checked first,
    // as the trainer's step() does
    trainStep({ trainer, samples, label }) {
      const e = get(trainers, trainer, "trainer");
      const list = Array.from(samples ?? []);
      const labels = e.t._labels(label, list.length);
      return { loss: e.t._stepOn(featuresOf(e, list), labels), featureRuns: e.t.featureRuns };
    },
    trainPredict({ trainer, samples }) {
      const e = get(trainers, trainer, "trainer");
      if (typeof e.t.predict !== "function") throw new InputError("predict(): the trainer of train: \"head\" has none");
      const logits = e.t._predictOn(featuresOf(e, Array.from(samples ?? [])));
      return new Transfer({ logits, featureRuns: e.t.featureRuns }, logits.map((z) => z.buffer));
    },
    trainExport({ trainer }) {
      const bytes = get(trainers, trainer, "trainer").t.export();
      return new Transfer(bytes, bytes.byteLength === bytes.buffer.byteLength ? [bytes.buffer] : []);
    },
    trainWeights({ trainer }) {
      const w = get(trainers, trainer, "trainer").t.weights;
      return new Transfer(w, buffersOf(w));
    },
    trainRelease({ trainer }) {
      trainers.get(trainer)?.t.release?.();
      trainers.delete(trainer);
    },
  };
}

/** Serve the protocol on port {onMessage(fn), post(message, transfer)}; init(options) makes the runtime. */
export function serve(port, init) {
  const ops = makeOps(init);
  port.onMessage(async (msg) => {
    const { id, op, args } = msg;
    try {
      if (!ops[op]) throw new Error(`unknown worker operation ${op}`);
      const result = await ops[op](args ?? {});
      if (result instanceof Transfer) port.post({ id, ok: true, result: result.result }, result.buffers);
      else port.post({ id, ok: true, result }, []);
    } catch (e) {
      port.post({ id, ok: false, error: { name: e?.name ?? "Error", message: e?.message ?? String(e) } }, []);
    }
  });
}
