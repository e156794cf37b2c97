// The Worker wrapper on Node (worker_threads, the same worker.js a page uses).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { initWorker } from "wasmrt/worker";
import { checkOutputs, feeds, modelPath, variants } from "./helpers.mjs";

test("load and run in a worker, with transferred buffers, typed errors, release", async () => {
  const rt = await initWorker({ variant: variants()[0] });
  try {
    assert.equal(rt.variant, variants()[0]);
    assert.match(rt.host, /node \(worker\)/);
    for (const name of ["face_detector", "selfie_segmentation"]) {
      const model = await rt.load(modelPath(name));
      assert.deepEqual(model.inputs[0].shape.length, 4);
      const f = feeds(name);
      checkOutputs(assert, name, await model.run(f), `worker ${name}`);
      // transfer: the input buffer moves to the worker (detached here), outputs come back as Tensors
      const k = model.inputs[0].name;
      const copy = { [k]: { data: f[k].data.slice(), shape: f[k].shape } };
      const out = await model.run(copy, { transfer: true });
      assert.equal(copy[k].data.byteLength, 0, "input buffer was transferred");
      checkOutputs(assert, name, out, `worker ${name} transferred`);
      assert.ok(Object.values(out)[0] instanceof wasmrt.Tensor);
      await model.release();
      await assert.rejects(model.run(f), /released/);
    }
    // bytes and errors cross the boundary with their classes
    const model = await rt.load(new Uint8Array(readFileSync(modelPath("face_detector"))));
    await assert.rejects(model.run({ nope: new Float32Array(1) }), (e) => e instanceof wasmrt.InputError && /unknown input 'nope'/.test(e.message));
    await assert.rejects(rt.load(new Uint8Array(64)), (e) => e instanceof wasmrt.ModelFormatError);
    checkOutputs(assert, "face_detector", await model.run(feeds("face_detector")), "worker after errors");
    assert.equal((await rt.stats()).models, 1);
    await model.release();
    assert.equal((await rt.stats()).models, 0);
  } finally {
    rt.terminate();
  }
  await assert.rejects(rt.load(modelPath("face_detector")), /terminated/);
});
