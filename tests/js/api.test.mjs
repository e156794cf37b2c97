// The whole public API on Node, for every variant this Node can run.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import * as wasmrt from "wasmrt";
import { checkOutputs, feeds, FIXTURES, manifest, modelPath, report, variants } from "./helpers.mjs";

const MODELS = Object.keys(manifest.models);
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];

test("variant probes and the automatic choice", async () => {
  const f = wasmrt.probe(wasmrt.defaultHost());
  assert.equal(f.scalar.available, true);
  assert.equal(f.simd.available, true, "Node 20+ runs SIMD128");
  const major = +process.versions.node.split(".")[0];
  assert.equal(f.relaxed.available, major >= 22, f.relaxed.reason);
  const rt = await wasmrt.init();
  assert.equal(rt.variant, major >= 22 ? "relaxed" : "simd");
  assert.match(rt.reason, new RegExp(`^${rt.variant}: `));
  if (major < 22) assert.match(rt.reason, /no relaxed: .*(Node|dot product)/);
  assert.equal(rt.host, "node");
});

test("an unavailable or unknown variant is refused with the reason", async () => {
  await assert.rejects(wasmrt.init({ variant: "avx9" }), /unknown variant "avx9"/);
  const hostWithoutSimd = { ...wasmrt.nodeHost, name: "old", validate: () => false };
  await assert.rejects(wasmrt.init({ variant: "simd", host: hostWithoutSimd }),
    /simd variant is not available on this host: WebAssembly.validate rejects SIMD128/);
  // ... and auto falls back to scalar on such a host
  const rt = await wasmrt.init({ host: hostWithoutSimd });
  assert.equal(rt.variant, "scalar");
  assert.match(rt.reason, /no relaxed: .*no simd: /);
});

test("wasmPaths: a folder, per-variant sources, and a clear error for a wrong folder", async () => {
  const dist = new URL("../../js_bindings/dist/", import.meta.url);
  const v = variants().at(-1);
  assert.equal((await wasmrt.init({ variant: v, wasmPaths: dist.pathname })).variant, v);
  const bytes = readFileSync(new URL(`wasmrt-${v}.wasm`, dist));
  assert.equal((await wasmrt.init({ variant: v, wasmPaths: { [v]: bytes } })).variant, v);
  await assert.rejects(wasmrt.init({ variant: v, wasmPaths: "/nonexistent" }),
    (e) => e instanceof wasmrt.WasmrtError && /cannot load the \w+ engine: cannot read \/nonexistent\/wasmrt-\w+\.wasm/.test(e.message));
});

for (const variant of variants()) {
  test(`${variant}: every model matches python_ref, from every kind of source`, async () => {
    const rt = await wasmrt.init({ variant });
    assert.equal(rt.variant, variant);
    for (const name of MODELS) {
      const path = modelPath(name);
      const bytes = readFileSync(path);
      const sources = {
        path, fileURL: pathToFileURL(path), u8: new Uint8Array(bytes),
        arrayBuffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), blob: new Blob([bytes]),
      };
      for (const [kind, src] of Object.entries(sources)) {
        if (kind !== "path" && name !== "face_detector") continue; // every source kind once, on a small model
        const t0 = performance.now();
        const model = await rt.load(src);
        const loadMs = performance.now() - t0;
        assert.deepEqual(model.inputs.map((t) => t.name), Object.keys(manifest.models[name].inputs));
        assert.deepEqual(model.outputs.map((t) => t.name), Object.keys(manifest.models[name].outputs));
        for (const t of [...model.inputs, ...model.outputs]) assert.equal(t.dtype, "float32");
        const times = [];
        let out;
        for (let i = 0; i < (variant === "scalar" ? 2 : 4); i++) {
          const t1 = performance.now();
          out = await model.run(feeds(name));
          times.push(performance.now() - t1);
        }
        const errs = checkOutputs(assert, name, out, `${variant} ${name} (${kind})`);
        if (kind === "path") {
          report("node-run", { variant, model: name, errs, loadMs, firstMs: times[0], medianMs: median(times.slice(1)) });
        }
        model.release();
        assert.equal(model.released, true);
        model.release(); // twice is fine
        await assert.rejects(model.run(feeds(name)), /released/);
      }
    }
  });
}

test("feeds: {data, shape}, a Tensor, a bare typed array, a plain array", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const model = await rt.load(modelPath("face_detector"));
  const [spec] = model.inputs;
  const { data, shape } = feeds("face_detector")[spec.name];
  const a = await model.run({ [spec.name]: { data, shape } });
  const b = await model.run({ [spec.name]: new wasmrt.Tensor(data, shape) });
  const c = await model.run({ [spec.name]: data });
  const d = await model.run(new wasmrt.Tensor("float32", Array.from(data), [...shape])); // single-input shorthand
  const e = model.runSync(data);
  for (const r of [b, c, d, e]) {
    for (const k of Object.keys(a)) assert.deepEqual(r[k].data, a[k].data);
  }
  assert.ok(a.regressors instanceof wasmrt.Tensor);
  assert.ok(a.regressors.data instanceof Float32Array);
  // outputs are copies: running again does not change them
  const before = a.regressors.data.slice();
  await model.run({ [spec.name]: new Float32Array(data.length) });
  assert.deepEqual(a.regressors.data, before);
  model.release();
});

test("inputView: the input's buffer in engine memory, run in place; other engine memory is still copied", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const model = await rt.load(modelPath("face_detector"));
  const [spec] = model.inputs;
  const { data, shape } = feeds("face_detector")[spec.name];
  const want = await model.run({ [spec.name]: { data, shape } });
  const view = model.inputView();
  assert.ok(view instanceof Float32Array && view.length === data.length);
  view.set(data);
  const got = await model.run({ [spec.name]: { data: view, shape } });
  for (const k of Object.keys(want)) assert.deepEqual(got[k].data, want[k].data);
  // an array elsewhere in engine memory (a block of the runtime's) is an input like any other: copied in
  const p = rt._alloc(data.length * 4, "a test input");
  const other = new Float32Array(rt._ex.memory.buffer, p, data.length);
  other.set(data);
  model.inputView().fill(0); // a new view: the allocation may have grown the memory (and detached the first)
  const again = await model.run({ [spec.name]: { data: other, shape } });
  for (const k of Object.keys(want)) assert.deepEqual(again[k].data, want[k].data);
  rt._ex.wrt_free(p);
  assert.throws(() => model.inputView(1), /this model has 1 inputs/);
  model.release();
  assert.throws(() => model.inputView(), /released/);
});

test("typed errors name the problem, and the runtime stays usable", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const good = readFileSync(modelPath("face_detector"));
  const expectError = async (p, Cls, re) => {
    const e = await p.then(() => null, (x) => x);
    assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e?.name}: ${e?.message}`);
    assert.ok(e instanceof wasmrt.WasmrtError);
    assert.equal(e.name, Cls.name);
    assert.match(e.message, re);
    return e.message;
  };
  const messages = {};
  messages.garbage = await expectError(rt.load(new TextEncoder().encode("this is not a model at all")), wasmrt.ModelFormatError, /./);
  messages.truncated = await expectError(rt.load(good.subarray(0, good.length >> 1)), wasmrt.ModelFormatError, /./);
  const flipped = new Uint8Array(good);
  flipped.set([0xff, 0xff, 0xff, 0x7f], 0); // root offset far outside the file
  messages.badRoot = await expectError(rt.load(flipped), wasmrt.ModelFormatError, /./);
  messages.missingFile = await expectError(rt.load(`${FIXTURES}/nope.wrt`), wasmrt.WasmrtError, /cannot read .*nope\.wrt: no such file/);
  await expectError(rt.load(42), wasmrt.InputError, /cannot load a model from number/);
  messages.unsupported = await expectError(rt.load(manifest.bad_models.arena_3g), wasmrt.UnsupportedOpError,
    /the memory plan needs a 3221225472-byte arena; the limit is 2 GiB/);

  const model = await rt.load(good);
  const [spec] = model.inputs;
  const { data } = feeds("face_detector")[spec.name];
  await expectError(model.run({ nope: data }), wasmrt.InputError, /unknown input 'nope'; the model's inputs are \["input"\]/);
  await expectError(model.run({}), wasmrt.InputError, /missing input 'input' \(float32 \[1, 128, 128, 3\]\)/);
  await expectError(model.run({ input: { data, shape: [1, 3, 128, 128] } }), wasmrt.InputError,
    /input 'input': shape \[1,3,128,128\] does not match the model's \[1, 128, 128, 3\]/);
  await expectError(model.run({ input: new Int32Array(data.length) }), wasmrt.InputError, /expected float32 data, got Int32Array/);
  await expectError(model.run({ input: data.subarray(1) }), wasmrt.InputError, /49151 elements given/);
  await expectError(model.run("text"), wasmrt.InputError, /run\(\) takes/);
  // still usable: the same model and a new one give the reference results
  checkOutputs(assert, "face_detector", await model.run(feeds("face_detector")), "after errors");
  const again = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await again.run(feeds("face_detector")), "reload after errors");
  model.release();
  again.release();
  report("node-errors", { messages });
});

test("metadata: labels and preprocessing hints from the model file", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const m = await rt.load(modelPath("efficientnet_lite0"));
  assert.equal(m.labels.length, 1000);
  assert.match(m.labels[285], /Egyptian cat/);
  assert.deepEqual(m.metadata.preprocess[0], {
    layout: "NCHW", color: "RGB", mean: [127, 127, 127], std: [128, 128, 128], resize: "crop", cropFraction: 0.875,
  });
  assert.equal(m.metadata.source, "efficientnet_lite0.onnx");
  m.release();
});

test("image.toTensor and a classification end to end", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const m = await rt.load(modelPath("efficientnet_lite0"));
  for (const c of manifest.images) {
    if (c.model !== "efficientnet_lite0" || !c.expect_label) continue;
    const x = await wasmrt.image.toTensor({ data: readFileSync(`${FIXTURES}/${c.rgb}`), width: c.width, height: c.height, channels: 3 }, m);
    const logits = (await m.run({ input: x })).logits.data;
    const best = logits.indexOf(Math.max(...logits));
    assert.match(m.labels[best], new RegExp(c.expect_label), `${c.image}: got ${m.labels[best]}`);
  }
  m.release();
});

test("out of memory is an OutOfMemoryError, and releasing models makes room again", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const big = [];
  let error = null;
  // beyond the default 1 GiB budget: refused before allocating, naming the limit
  await assert.rejects(rt.load(manifest.bad_models.arena_1_9g), (e) => e instanceof wasmrt.OutOfMemoryError &&
    /beyond its memory limit of 1073741824 bytes \(max_memory\)/.test(e.message));
  for (let i = 0; i < 3 && !error; i++) { // 1.9 GiB arenas: the third cannot fit in 4 GiB of wasm memory
    try { big.push(await rt.load(manifest.bad_models.arena_1_9g, { maxMemory: 3e9 })); } catch (e) { error = e; }
  }
  assert.equal(big.length, 2); // the second lives above 2 GiB: pointers are unsigned
  assert.ok(error instanceof wasmrt.OutOfMemoryError, `got ${error?.name}: ${error?.message}`);
  assert.match(error.message, /out of memory: the arena needs \d+ bytes/);
  big.forEach((m) => m.release());
  const m = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "after out of memory");
  m.release();
  report("node-errors", { messages: { outOfMemory: error.message } });
});
