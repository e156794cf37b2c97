// `wasmrt bench --vision` in the Chromium page: the three solutions of wasmrt/vision frame by frame on a photo (the
// face mesh try-on, selfie segmentation with the background replaced, hand tracking), each model timed inside its
// pipeline, and LiteRT.js running the same .tflite on the same input tensor in the same page, interleaved round by
// round; then the three solutions one after the other per frame on one runtime with one thread and on one with two,
// and at the same time in Workers with one thread each (as many Workers as threads, up to one per solution).
// Job (wasmrt/bench/vision.py): {vision: {frame: {file, width, height}, models: {name: {wrt, tflite}}, warmup,
// rounds, passes, threads}}.

import { pipelines } from "./vision_pipelines.mjs";

const SOLUTIONS = ["face", "segment", "hands", "hand"];

// The largest difference between two runs' outputs (in the model's output order) over the largest magnitude of
// ours, of all outputs: the cross-check that both engines ran the same model on the same input.
function relErr(ours, theirs) {
  if (ours.length !== theirs.length) return null;
  let diff = 0, big = 0;
  for (let k = 0; k < ours.length; k++) {
    if (ours[k].length !== theirs[k].length) return null;
    for (let i = 0; i < ours[k].length; i++) {
      diff = Math.max(diff, Math.abs(ours[k][i] - theirs[k][i]));
      big = Math.max(big, Math.abs(ours[k][i]));
    }
  }
  return diff / (big || 1);
}

async function litert(lib, bytes) {
  const models = {};
  for (const [name, b] of Object.entries(bytes)) models[name] = await lib.loadAndCompile(b.tflite, { accelerator: "wasm" });
  return {
    async run(name, x) {
      const input = new lib.Tensor(x.data, x.shape);
      const results = await models[name].run([input]);
      const list = Array.isArray(results) ? results : Object.values(results);
      const out = list.map((t) => t.toTypedArray()); // read the outputs back, as the pipelines' models do
      for (const t of [input, ...list]) t.delete();
      return out;
    },
    release: () => Object.values(models).forEach((m) => m.delete()),
  };
}

// The solutions of a frame split over Workers with a one-thread runtime each (vision_worker.mjs), run at the same
// time: hands in one, the face mesh and segmentation (about as much work) in the other; one each from 3 threads.
const groups = (n) => (n >= 3 ? [["face"], ["segment"], ["hands"]] : [["hands"], ["face", "segment"]]);

function worker() {
  const w = new Worker(new URL("./vision_worker.mjs", import.meta.url), { type: "module" });
  const pending = new Map();
  let next = 1;
  w.onmessage = ({ data: { id, ok, result, error } }) => {
    const p = pending.get(id);
    pending.delete(id);
    if (ok) p.resolve(result); else p.reject(new Error(`vision worker: ${error}`));
  };
  w.onerror = (e) => { for (const p of pending.values()) p.reject(new Error(`vision worker failed: ${e.message}`)); };
  return {
    call: (op, args, transfer = []) => new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      w.postMessage({ id, op, args }, transfer);
    }),
    terminate: () => w.terminate(),
  };
}

async function workers(v, libs, bytes, frame) {
  const list = groups(v.threads).map((want) => ({ want, w: worker() }));
  const wrt = Object.fromEntries(Object.entries(bytes).map(([n, b]) => [n, { wrt: b.wrt }]));
  await Promise.all(list.map(({ want, w }) => w.call("init", { want, bytes: wrt, width: frame.width,
    height: frame.height, variant: "relaxed", wasmPaths: libs.wasmrtOptions.wasmPaths })));
  return {
    groups: list.map(({ want }) => want),
    // one frame: each Worker gets its copy of the frame's bytes (transferred), all run at once; the frame's time
    // is until the last one answers
    async frame() {
      const t0 = performance.now();
      const rs = await Promise.all(list.map(({ w }) => {
        const buffer = frame.data.slice().buffer;
        return w.call("frame", { buffer }, [buffer]);
      }));
      const total = performance.now() - t0;
      return { total, ms: Object.assign({}, ...rs.map((r) => r.ms)), found: Object.assign({}, ...rs.map((r) => r.found)) };
    },
    async release() {
      await Promise.all(list.map(({ w }) => w.call("release")));
      list.forEach(({ w }) => w.terminate());
    },
  };
}

const frameTimer = (sink) => async (fn) => {
  sink.runs = [];
  sink.ranDetector = null;
  sink.parts = {};
  sink.bookkeeping = 0;
  sink.booked = {};
  const t0 = performance.now();
  const found = await fn();
  const total = performance.now() - t0 - sink.bookkeeping; // less the bench's copies (model inputs, the photo)
  const models = {};
  for (const [name, ms] of sink.runs) models[name] = (models[name] ?? 0) + ms;
  return { total, models, runs: sink.runs, found, detector: sink.ranDetector, parts: sink.parts };
};

export async function runVision(job, libs, readBytes, progress) {
  const v = job.vision;
  const vision = await import("/wasmrt/vision/index.js");
  const pixels = await readBytes(v.frame.file);
  const frame = { data: new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, pixels.byteLength),
    width: v.frame.width, height: v.frame.height };
  const bytes = {};
  for (const [name, f] of Object.entries(v.models)) bytes[name] = { wrt: await readBytes(f.wrt), tflite: await readBytes(f.tflite) };
  const lib = await libs.litertModule("relaxed");
  const passes = [];
  const info = {};
  const total = v.passes * (v.warmup + v.rounds);
  let done = 0;
  // Per pass, both runtimes loaded, each round: the one-thread runtime (the solutions, the models alone against
  // LiteRT.js, the three together), then the threaded one (the three together), then an idle pause (v.idle_ms)
  // longer than the window in which the threaded runtime's pool threads poll after a run (rt_threads.c): asleep,
  // they do not share the cores with the next round's one-thread frames.
  const idle = () => new Promise((resolve) => setTimeout(resolve, v.idle_ms));
  for (let p = 0; p < v.passes; p++) {
    await progress({ stage: "load", engine: `vision pass ${p + 1}` });
    const rec = { solutions: Object.fromEntries(SOLUTIONS.map((s) => [s, []])), alone: {}, litert: {}, together_1: [],
      together_n: [], together_w: [], max_rel_err: {} };
    const together = (pl) => async () => [await pl.face(), await pl.segment(), await pl.hands()];
    const rt1 = await libs.wasmrt.init({ variant: "relaxed", threads: 1, ...libs.wasmrtOptions });
    const rtN = await libs.wasmrt.init({ variant: "relaxed", threads: v.threads, ...libs.wasmrtOptions });
    Object.assign(info, { variant: rt1.variant, threads: rtN.threads, threads_reason: rtN.reason ?? "" });
    const s1 = { runs: [], feeds: {}, models: {}, keepInputs: true }, sN = { runs: [], feeds: {}, models: {} };
    const one = await pipelines(vision, rt1, bytes, frame, s1);
    const many = await pipelines(vision, rtN, bytes, frame, sN);
    const peer = await litert(lib, bytes);
    const inWorkers = await workers(v, libs, bytes, frame);
    info.worker_groups = inWorkers.groups;
    const time1 = frameTimer(s1), timeN = frameTimer(sN);
    for (let r = 0; r < v.warmup + v.rounds; r++) {
      const keep = r >= v.warmup;
      await idle();
      for (const s of SOLUTIONS) {
        const f = await time1(one[s]);
        if (keep) rec.solutions[s].push(f);
      }
      // each model alone, ours and LiteRT.js (the order alternating by round), on the input tensor its pipeline
      // fed it last (the face detector's: the first frame, before the face was tracked)
      for (const [name, feeds] of Object.entries(s1.feeds)) {
        const x = Object.values(feeds)[0];
        const runs = [["ours", () => s1.models[name].run(feeds)], ["litert", () => peer.run(name, x)]];
        const outs = {};
        for (const [who, run] of r % 2 ? runs.reverse() : runs) {
          const t0 = performance.now();
          outs[who] = await run();
          const ms = performance.now() - t0;
          if (keep) ((who === "ours" ? rec.alone : rec.litert)[name] ??= []).push(ms);
        }
        if (r === 0) rec.max_rel_err[name] = relErr(Object.values(outs.ours).map((t) => t.data), outs.litert);
      }
      const t1 = await time1(together(one));
      const tN = await timeN(together(many));
      const tW = await inWorkers.frame();
      if (keep) { rec.together_1.push(t1); rec.together_n.push(tN); rec.together_w.push(tW); }
      await progress({ stage: "round", done: ++done, total });
    }
    peer.release();
    await inWorkers.release();
    await one.release();
    await many.release();
    rt1.close?.();
    rtN.close?.();
    passes.push(rec);
  }
  return { info, passes };
}
