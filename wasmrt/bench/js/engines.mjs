// Engine adapters for `wasmrt bench`, shared by the Node runner and the Chromium page.
// Every adapter is { id, load(), run(inputs) -> outputs } where one run = copy the inputs in, run the model, read the
// outputs back into JS arrays: what an application pays per frame, and what peers.md defines as one timed run.
// `libs` carries the already imported peer libraries (imported differently by each host), `readBytes(path)` the
// host's way to read a model file.

const F32 = Float32Array;
const TYPED = { float32: F32, int32: Int32Array, int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array };
// Every library below already returns outputs as fresh JS copies (not views of wasm memory), so they are used as is.

async function ortEngine(spec, libs, readBytes) {
  const ort = libs.ort;
  ort.env.wasm.numThreads = spec.threads ?? 1; // fixed per page/process: the job gives every ort engine one count
  ort.env.logLevel = "error";
  const session = await ort.InferenceSession.create(await readBytes(spec.model), {
    executionProviders: ["wasm"], graphOptimizationLevel: "all",
  });
  return {
    async run(inputs, outputNames) {
      const feeds = {};
      for (const x of inputs) feeds[x.name] = new ort.Tensor("float32", x.data, x.shape);
      const res = await session.run(feeds);
      return outputNames.map((n) => res[n].data);
    },
    info: { version: ort.env.versions?.web ?? "" },
    release: () => session.release(),
  };
}

async function tfjsEngine(spec, libs, readBytes) {
  const { tf, tfconv } = libs;
  const json = JSON.parse(new TextDecoder().decode(await readBytes(spec.model)));
  const dir = spec.model.slice(0, spec.model.lastIndexOf("/") + 1);
  const weights = await readBytes(dir + json.weightsManifest[0].paths[0]);
  const model = await tfconv.loadGraphModel(tf.io.fromMemory({
    modelTopology: json.modelTopology,
    weightSpecs: json.weightsManifest[0].weights,
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
  }));
  const names = json.userDefinedMetadata.wasmrt;
  return {
    async run(inputs, outputNames) {
      const feeds = {};
      for (const x of inputs) feeds[names.inputs[x.name]] = tf.tensor(x.data, x.shape, "float32");
      let ys = model.execute(feeds, outputNames.map((n) => names.outputs[n]));
      if (!Array.isArray(ys)) ys = [ys];
      const out = [];
      for (const y of ys) out.push(await y.data());
      tf.dispose([...Object.values(feeds), ...ys]);
      return out;
    },
    info: { version: tf.version_core, backend: tf.getBackend(), threads: libs.tfThreads ?? 1 },
    release: () => model.dispose(),
  };
}

async function litertEngine(spec, libs, readBytes) {
  // LiteRT.js keeps its runtime in a module-level global: each wasm build (plain SIMD "compat", relaxed SIMD) gets
  // its own instance of the module, so both can be interleaved in one process.
  const lib = await libs.litertModule(spec.variant);
  const model = await lib.loadAndCompile(await readBytes(spec.model), { accelerator: "wasm" });
  const { Tensor } = lib;
  return {
    async run(inputs, outputNames) {
      const tensors = inputs.map((x) => new Tensor(x.data, x.shape));
      const results = await model.run(tensors);
      const list = Array.isArray(results) ? results : Object.values(results);
      const out = list.slice(0, outputNames.length).map((t) => t.toTypedArray());
      for (const t of [...tensors, ...list]) t.delete();
      return out;
    },
    info: { variant: spec.variant },
    release: () => model.delete(),
  };
}

async function wasmrtEngine(spec, libs, readBytes) {
  // spec.binding "baseline": an earlier build's binding with its own modules (bench --baseline), else this build
  const { wasmrt, wasmrtOptions } = spec.binding === "baseline" ? libs.baseline : libs;
  const rt = await wasmrt.init({ variant: spec.variant, threads: spec.threads ?? 1, ...wasmrtOptions });
  const model = rt.loadBytes(await readBytes(spec.model),
    { ...(spec.sparse ? { sparse: spec.sparse } : {}), ...(spec.conv ? { conv: spec.conv } : {}) });
  return {
    async run(inputs, outputNames) {
      const feeds = {};
      for (const x of inputs) feeds[x.name] = { data: x.data, shape: x.shape };
      const res = model.runSync(feeds);
      const list = Object.values(res);
      return outputNames.map((n, i) => (res[n] ?? list[i]).data);
    },
    info: { variant: rt.variant, target: rt.target, threads: rt.threads, reason: rt.reason },
    release: () => { model.release(); rt.close?.(); },
    profile: (inputs, runs) => profileOps(rt, model, inputs, runs, libs.cpuMsSync),
  };
}

// Per-op times inside the whole graph: the engine runs op by op (wrt_run_ops) and this host's clock times each
// step, so the module needs no clock import: `clock`, this thread's CPU time where the host has a synchronous one
// (Node), else performance.now. Inputs are written before every run, as wrt_run requires.
function profileOps(rt, model, inputs, runs, clock) {
  const now = clock ?? (() => performance.now());
  // what one reading of the clock costs itself (a CPU clock read from /proc takes tens of us): taken off each step
  const gaps = Array.from({ length: 21 }, () => -now() + now()).sort((x, y) => x - y);
  const cost = clock ? gaps[10] : 0;
  const ex = rt._ex;
  const h = model._h;
  const n = ex.wrt_num_ops(h);
  const ops = Array.from({ length: n }, (_, i) => ({
    type: rt._cstr(ex.wrt_op_type(h, i) >>> 0), name: rt._cstr(ex.wrt_op_name(h, i) >>> 0), kernel: rt._cstr(ex.wrt_op_kernel(h, i) >>> 0),
  }));
  const samples = Array.from({ length: n }, () => new Float64Array(runs));
  const whole = new Float64Array(runs);
  const write = () => inputs.forEach((x, i) =>
    new x.data.constructor(ex.memory.buffer, ex.wrt_input_ptr(h, i) >>> 0, x.data.length).set(x.data));
  for (let r = 0; r < runs; r++) {
    write();
    const start = now();
    let t0 = start;
    let steps = 0;
    // a chain of element-wise ops runs as one step (wrt_op_span): its time is its first op's, the others' 0
    for (let i = 0, span; i < n; i += span) {
      span = ex.wrt_op_span ? ex.wrt_op_span(h, i) : 1;
      const code = ex.wrt_run_ops(h, i, i + span);
      const t1 = now();
      if (code !== 0) throw new Error(`op ${i} (${ops[i].type}) failed: ${rt._message()}`);
      samples[i][r] = Math.max(0, t1 - t0 - cost);
      for (let k = i + 1; k < i + span; k++) samples[k][r] = 0;
      t0 = t1;
      steps++;
    }
    whole[r] = Math.max(0, t0 - start - steps * cost); // the readings may have cost less than the estimate
  }
  return { ops, samples: samples.map((s) => Array.from(s)), whole_ms: Array.from(whole), clock: clock ? "cpu" : "wall" };
}

const KINDS = { ort: ortEngine, tfjs: tfjsEngine, litert: litertEngine, wasmrt: wasmrtEngine };

export async function makeEngine(spec, libs, readBytes) {
  const make = KINDS[spec.kind];
  if (!make) throw new Error(`unknown engine kind ${spec.kind}`);
  const t0 = performance.now();
  const engine = await make(spec, libs, readBytes);
  return { id: spec.id, ...engine, loadMs: performance.now() - t0 };
}

function b64(f32) {
  const bytes = new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// Each pass loads every engine afresh, warms each up, times `rounds` rounds and releases them. In each round every
// engine runs once, in an order rotated by one per round so no engine always runs first after the others have cooled
// the caches. In one process, of identical engines the one created first runs 1-4% slower (natively; bench
// README), so the creation starts with another engine each pass: with as many passes as engines each gets that place.
export async function runJob(job, libs, readBytes, progress = () => {}) {
  const inputs = [];
  for (const x of job.inputs) {
    const bytes = await readBytes(x.file);
    const T = TYPED[x.dtype ?? "float32"]; // integer inputs (token ids, masks) keep their type
    const own = new Uint8Array(bytes); // a copy at offset 0: a small file's bytes may sit unaligned in a shared pool
    inputs.push({ name: x.name, shape: x.shape, data: new T(own.buffer, 0, own.byteLength / T.BYTES_PER_ELEMENT) });
  }
  const results = {};
  const passes = job.passes ?? 1;
  const total = job.engines.length * passes * (job.warmup + job.rounds);
  let done = 0;
  // job.gap_ms: an idle pause before every run, so that the Workers the engine before left spinning sleep first
  const gap = () => (job.gap_ms ? new Promise((resolve) => setTimeout(resolve, job.gap_ms)) : null);
  let engines = [];
  for (let p = 0; p < passes; p++) {
    engines = await loadEngines(job, libs, readBytes, inputs, results, p, progress);
    // libs.waitMs: how long this process's threads waited for a core, for runs on several threads, read before
    // the idle pause. Where it is a call to the driver (libs.waitsOf "warmup": Chromium), the browser and the driver
    // go on working after each call, on the cores that a run on several threads needs: there it is read around the
    // warm-up runs only, and nothing but the idle pause comes between two timed runs.
    const afterPause = async (e, timed, run) => {
      const wait = libs.waitMs && !e.single && (libs.waitsOf === "warmup") !== timed;
      const w0 = wait ? await libs.waitMs() : 0;
      await gap();
      await run();
      if (wait) results[e.id].wait_ms.push((await libs.waitMs()) - w0);
    };
    for (let w = 0; w < job.warmup; w++) {
      for (const e of engines) {
        await afterPause(e, false, () => e.run(inputs, job.outputs));
        await progress({ stage: "warmup", done: ++done, total });
      }
    }
    // libs.cpuMs (Node): this thread's CPU time, which a loaded machine inflates far less than the wall clock
    for (let r = p * job.rounds; r < (p + 1) * job.rounds; r++) {
      for (let k = 0; k < engines.length; k++) {
        const e = engines[(k + r) % engines.length];
        const cpu = libs.cpuMs && e.single;
        await afterPause(e, true, async () => {
          for (let i = 0; i < (job.warm_runs ?? 0); i++) await e.run(inputs, job.outputs);
          const c0 = cpu ? await libs.cpuMs() : 0;
          const t0 = performance.now();
          await e.run(inputs, job.outputs);
          const t1 = performance.now();
          if (cpu) results[e.id].cpu_ms.push((await libs.cpuMs()) - c0);
          results[e.id].times_ms.push(t1 - t0);
        });
        await progress({ stage: "round", done: ++done, total });
      }
    }
    if (p < passes - 1) await releaseAll(engines);
  }
  if (job.profile_runs) {
    for (const e of engines) {
      if (!e.profile) continue;
      await progress({ stage: "profile", engine: e.id });
      try {
        results[e.id].profile = e.profile(inputs, job.profile_runs);
      } catch (err) {
        results[e.id].profile = { error: String(err?.stack ?? err).slice(0, 2000) };
      }
    }
  }
  await releaseAll(engines);
  return results;
}

// Pass p's engines in report order, created starting with engine p; the first pass keeps each one's load time and
// first outputs (the cross-check), and an engine that failed to load once is left out of later passes.
async function loadEngines(job, libs, readBytes, inputs, results, p, progress) {
  const n = job.engines.length;
  const made = new Array(n).fill(null);
  for (let i = 0; i < n; i++) {
    const at = (i + p) % n;
    const spec = job.engines[at];
    if (results[spec.id]?.error) continue;
    await progress({ stage: "load", engine: spec.id });
    try {
      const e = await makeEngine(spec, libs, readBytes);
      const outputs = await e.run(inputs, job.outputs); // first run: also the output to cross-check
      // the main thread's CPU time says nothing about a run spread over threads: wall clock only for those
      e.single = (spec.threads ?? 1) === 1;
      if (!results[spec.id]) {
        const info = { threads: spec.threads ?? 1, ...e.info };
        results[spec.id] = { load_ms: e.loadMs, info, outputs: outputs.map(b64), times_ms: [], cpu_ms: [],
          wait_ms: [], wait_of: libs.waitsOf ?? "timed", passes: job.passes ?? 1 };
      }
      made[at] = e;
    } catch (err) {
      results[spec.id] = { error: String(err?.stack ?? err).slice(0, 2000) };
    }
  }
  return made.filter((e) => e !== null && !results[e.id].error);
}

async function releaseAll(engines) {
  for (const e of engines) {
    try {
      await e.release?.();
    } catch {
      // releasing is best effort: the process ends anyway
    }
  }
}
