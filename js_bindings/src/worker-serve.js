// The worker side of wasmrt's worker protocol (./worker-client.js): one runtime per Worker, driven by messages
// {id, op, args}, answered {id, ok, result | error}. For any message port: ./worker.js (Web Worker, worker_threads)
// and ../hosts/miniprogram-worker.js (a mini-program Worker). Trainers live here too: each sample's features are
// computed once, kept by the sample's id (the client sends a sample's data the first time only).

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
      models.get(model)?.release();
      models.delete(model);
      for (const [id, t] of trainers) if (t.model === model) trainers.delete(id);
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
    // samples: [{id, data?: ArrayBuffer of float32}]: data the first time a sample is sent
    trainStep({ trainer, samples, label }) {
      const { t, features } = get(trainers, trainer, "trainer");
      const list = Array.from(samples ?? []);
      const labels = t._labels(label, list.length);
      const feats = list.map(({ id, data }) => {
        let f = features.get(id);
        if (!f) {
          if (data === undefined) throw new Error(`sample #${id} was never sent to this worker`);
          f = t.featuresOf(data instanceof ArrayBuffer ? new Float32Array(data) : data);
          features.set(id, f);
        }
        return f;
      });
      return { loss: t._stepOn(feats, labels), featureRuns: t.featureRuns };
    },
    trainExport({ trainer }) {
      const bytes = get(trainers, trainer, "trainer").t.export();
      return new Transfer(bytes, [bytes.buffer]);
    },
    trainWeights({ trainer }) {
      return get(trainers, trainer, "trainer").t.weights;
    },
    trainRelease({ trainer }) {
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
