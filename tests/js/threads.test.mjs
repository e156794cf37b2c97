// Threads in Node (worker_threads): init({threads}) runs the threaded build on a Worker pool and gives the same
// bytes as one thread; where threads cannot run it falls back to one thread and says why; the pool is made once per
// runtime, so load/run/release cycles grow neither memory nor Workers; the wasmrt/worker API passes threads on.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { initWorker } from "wasmrt/worker";
import { checkOutputs, feeds, manifest, modelPath, variants } from "./helpers.mjs";

const THREADED = variants().filter((v) => v !== "scalar");

function bytesOf(outputs) {
  return Object.fromEntries(Object.entries(outputs).map(([k, t]) => [k, Buffer.from(t.data.buffer).toString("base64")]));
}

for (const variant of THREADED) {
  test(`${variant}: 2 threads, the same bytes as 1, on every bundled model`, async () => {
    const one = await wasmrt.init({ variant });
    const two = await wasmrt.init({ variant, threads: 2 });
    assert.equal(two.threads, 2, two.reason);
    assert.match(two.reason, /2 threads \(as asked\)/);
    for (const name of Object.keys(manifest.models)) {
      const bytes = new Uint8Array(readFileSync(modelPath(name)));
      const [a, b] = [one.loadBytes(bytes), two.loadBytes(bytes)];
      const out = b.runSync(feeds(name));
      checkOutputs(assert, name, out, `${variant} 2 threads`);
      assert.deepEqual(bytesOf(out), bytesOf(a.runSync(feeds(name))), `${name}: bytes differ from one thread`);
      a.release();
      b.release();
    }
    two.close();
    await assert.rejects(two.load(modelPath("face_detector")), /this runtime was closed/);
  });
}

test("one thread where threads cannot run, with the reason", async () => {
  const rt = await wasmrt.init({ variant: "scalar", threads: 4 });
  assert.equal(rt.threads, 1);
  assert.match(rt.reason, /1 thread of 4: the scalar build has no threaded variant/);
  const m = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "scalar, threads refused");
  const mini = { ...wasmrt.nodeHost, name: "wechat" };
  const rt2 = await wasmrt.init({ host: mini, variant: THREADED[0] ?? "scalar", threads: 2 });
  assert.equal(rt2.threads, 1);
  assert.match(rt2.reason, /the wechat host has no shared memory/);
  assert.rejects(() => wasmrt.init({ threads: 0 }), /positive integer or "auto"/);
});

test("200 load/run/release cycles on 2 threads: no growth of memory or Workers after the first", async () => {
  if (!THREADED.length) return;
  const rt = await wasmrt.init({ variant: THREADED[0], threads: 2 });
  const bytes = new Uint8Array(readFileSync(modelPath("face_detector")));
  const workers = rt._workers.length;
  let after = 0;
  for (let i = 0; i < 200; i++) {
    const m = rt.loadBytes(bytes);
    m.runSync(feeds("face_detector"));
    m.release();
    if (i === 0) after = rt.memoryBytes;
    else assert.equal(rt.memoryBytes, after, `memory grew at cycle ${i}`);
  }
  assert.equal(rt._workers.length, workers);
  rt.close();
});

test("the Worker API runs threads too", async () => {
  if (!THREADED.length) return;
  const rt = await initWorker({ variant: THREADED[0], threads: 2 });
  assert.equal(rt.threads, 2, rt.reason);
  const m = await rt.load(modelPath("face_landmark"));
  checkOutputs(assert, "face_landmark", await m.run(feeds("face_landmark")), "worker, 2 threads");
  rt.terminate();
});

test("the threaded build's 2 GiB shared memory: a model beyond it is an OutOfMemoryError, the runtime goes on", async () => {
  const rt = await wasmrt.init({ variant: THREADED[0], threads: 2 });
  assert.equal(rt.threads, 2, rt.reason);
  const big = await rt.load(manifest.bad_models.arena_1_9g, { maxMemory: 3e9 });
  await assert.rejects(rt.load(manifest.bad_models.arena_1_9g, { maxMemory: 3e9 }), (e) =>
    e instanceof wasmrt.OutOfMemoryError && /bytes/.test(e.message));
  big.release();
  const m = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "after the refused model");
  m.release();
  rt.close();
});
