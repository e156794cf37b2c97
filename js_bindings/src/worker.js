// The worker side of wasmrt/worker: one runtime per Worker, driven by messages {id, op, args}.
// Runs as a module Web Worker (self) or a Node worker_threads Worker (parentPort); outputs travel back transferred.

import { init } from "./index.js";

let runtime = null;
const models = new Map();
let nextModel = 1;

const summary = (m) => ({ inputs: m.inputs, outputs: m.outputs, metadata: m.metadata, name: m.name });

const ops = {
  async init(options) {
    runtime = await init(options);
    return { variant: runtime.variant, reason: runtime.reason, features: runtime.features, host: runtime.host,
      threads: runtime.threads };
  },
  async load({ source, name, maxMemory, maxWork, sparse, conv }) {
    const model = await need().load(source, { name, maxMemory, maxWork, sparse, conv });
    const id = nextModel++;
    models.set(id, model);
    return { id, ...summary(model) };
  },
  run({ model, feeds }) {
    const out = get(model).runSync(feeds);
    const plain = {};
    for (const [k, t] of Object.entries(out)) plain[k] = { dtype: t.dtype, data: t.data, shape: t.shape };
    return [plain, Object.values(out).map((t) => t.data.buffer)];
  },
  release({ model }) {
    models.get(model)?.release();
    models.delete(model);
  },
  stats() {
    return { memoryBytes: need().memoryBytes, models: models.size };
  },
};

function need() {
  if (!runtime) throw new Error("the worker runtime is not initialized");
  return runtime;
}

function get(id) {
  const m = models.get(id);
  if (!m) throw new Error(`no model #${id} in this worker (released?)`);
  return m;
}

async function handle(msg, reply) {
  const { id, op, args } = msg;
  try {
    if (!ops[op]) throw new Error(`unknown worker operation ${op}`);
    let result = await ops[op](args ?? {});
    let transfer = [];
    if (op === "run") [result, transfer] = result;
    reply({ id, ok: true, result }, transfer);
  } catch (e) {
    reply({ id, ok: false, error: { name: e?.name ?? "Error", message: e?.message ?? String(e) } }, []);
  }
}

if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  self.onmessage = (e) => handle(e.data, (m, t) => self.postMessage(m, t));
} else {
  const { parentPort } = await import(/* webpackIgnore: true */ "node:worker_threads");
  if (!parentPort) throw new Error("wasmrt's worker.js must run in a Worker");
  parentPort.on("message", (msg) => handle(msg, (m, t) => parentPort.postMessage(m, t)));
}
