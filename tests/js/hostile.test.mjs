// Hostile models in one JS runtime (tests/hostile_models.py, written by js_fixtures.py): each loads and runs equal
// to python_ref or is refused with its typed error; no model ever returns bytes of another model or of the caller;
// pointers above 2 GiB work; a trap becomes a WasmrtError naming the op and stops the runtime.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { checkOutputs, feeds, manifest, maxErr, modelPath, readArray, variants } from "./helpers.mjs";

const TOL = 2e-5; // the engine's per-op tolerance, relative to max|ref|

function tensors(entries) {
  const out = {};
  for (const [k, e] of Object.entries(entries)) out[k] = { data: readArray(e), shape: e.shape };
  return out;
}

function runCase(rt, c) {
  let m;
  try {
    m = rt.loadBytes(new Uint8Array(readFileSync(c.path)));
  } catch (e) {
    return { error: e };
  }
  try {
    return { outputs: m.runSync(tensors(c.inputs)) };
  } catch (e) {
    return { error: e };
  } finally {
    m.release();
  }
}

for (const variant of variants()) {
  test(`${variant}: every hostile model runs equal to python_ref or is refused with a typed error`, async () => {
    const rt = await wasmrt.init({ variant });
    for (const c of manifest.hostile) {
      const t0 = performance.now();
      const { error, outputs } = runCase(rt, c);
      assert.ok(performance.now() - t0 < 10000, `${c.name}: ${performance.now() - t0} ms (a hang)`);
      if (c.expect === "ok") {
        assert.equal(error, undefined, `${c.name}: ${error?.message}`);
        for (const [k, e] of Object.entries(c.outputs)) {
          const { err, ref } = maxErr(outputs[k].data, readArray(e));
          assert.ok(err <= TOL * ref + 2e-6, `${c.name}: ${k} error ${err} (max |ref| ${ref})`);
        }
      } else {
        assert.ok(error instanceof wasmrt.WasmrtError, `${c.name}: ${error}`);
        assert.match(error.message, new RegExp(c.expect), c.name);
      }
    }
    const m = await rt.load(modelPath("face_detector")); // the runtime is still usable
    checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), `${variant} after hostile models`);
    m.release();
  });
}

// Every 4-byte word of a float array that is not 0 (bytes another model must never hand back)
function words(arrays) {
  const set = new Set();
  for (const a of arrays) {
    const u = new Uint32Array(a.buffer, a.byteOffset, a.byteLength >> 2);
    for (const w of u) if (w !== 0 && w !== 0x80000000) set.add(w);
  }
  return set;
}

test("a hostile model run after a real one never returns the real model's or the caller's bytes", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const real = await rt.load(modelPath("face_detector"));
  const input = feeds("face_detector");
  const first = await real.run(input);
  const secret = words([...Object.values(first).map((t) => t.data), ...Object.values(input).map((t) => t.data)]);
  let checked = 0;
  for (const c of manifest.hostile.filter((h) => h.expect === "ok")) {
    const { error, outputs } = runCase(rt, c);
    assert.equal(error, undefined, `${c.name}: ${error?.message}`);
    const own = words(Object.values(c.outputs).map(readArray)); // values the case computes itself may coincide
    for (const [k, t] of Object.entries(outputs)) {
      const u = new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.byteLength >> 2);
      const leaked = u.filter((w) => secret.has(w) && !own.has(w));
      assert.equal(leaked.length, 0, `${c.name}: output ${k} holds ${leaked.length} words of the real model`);
      checked += u.length;
    }
  }
  assert.ok(checked > 500000, `only ${checked} output words checked`);
  const again = await real.run(input);
  for (const [k, t] of Object.entries(first)) assert.deepEqual(again[k].data, t.data, `${k} changed`);
  real.release();
});

test("models above 2 GiB of wasm memory load and run (unsigned pointers)", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const big = [];
  for (let i = 0; i < 2; i++) big.push(await rt.load(manifest.bad_models.arena_1_9g, { maxMemory: 3e9 }));
  const m = await rt.load(modelPath("face_detector")); // above the two 1.9 GiB arenas
  assert.ok(rt.memoryBytes > 3.5 * 2 ** 30, `wasm memory is ${rt.memoryBytes} bytes`);
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "above 2 GiB");
  m.release();
  big.forEach((b) => b.release());
});

test("limits: maxMemory and maxWork refuse a model with typed errors naming them", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  await assert.rejects(rt.load(modelPath("face_detector"), { maxMemory: 100000 }),
    (e) => e instanceof wasmrt.OutOfMemoryError && /memory limit of 100000 bytes \(max_memory\)/.test(e.message));
  await assert.rejects(rt.load(modelPath("face_detector"), { maxWork: 1e6 }),
    (e) => e instanceof wasmrt.ResourceLimitError && /work limit of 1000000 \(max_work\)/.test(e.message));
  assert.throws(() => rt.loadBytes(new Uint8Array(8), { maxMemory: -1 }), wasmrt.InputError);
  (await rt.load(modelPath("face_detector"), { maxMemory: 64e6, maxWork: 1e9 })).release();
});

test("a trap is a WasmrtError naming the op, and the runtime then refuses work", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const m = await rt.load(modelPath("face_detector"));
  m._h = 0x7ffffff0; // not a model: the engine reads outside linear memory
  assert.throws(() => m.runSync(feeds("face_detector")),
    (e) => e instanceof wasmrt.WasmrtError && /the engine crashed: .*out of bounds/.test(e.message));
  await assert.rejects(rt.load(modelPath("face_detector")), /stopped after an engine crash/);
});
