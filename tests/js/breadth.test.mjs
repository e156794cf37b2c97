// Models with run-time input sizes, streamed recurrent models and transformer encoders in Node, on every variant,
// against onnxruntime / LiteRT outputs written by tests/js/breadth_fixtures.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { FIXTURES, maxErr, variants } from "./helpers.mjs";

const B = JSON.parse(readFileSync(join(FIXTURES, "breadth.json"), "utf8"));
const TYPED = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };
function read(e) {
  const buf = readFileSync(join(FIXTURES, e.file));
  const T = TYPED[e.dtype];
  return new T(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}
const tensor = (e) => new wasmrt.Tensor(e.dtype, read(e), e.shape);
function close(got, e, label) {
  assert.deepEqual(got.shape, e.shape, `${label}: shape`);
  const { err, ref } = maxErr(got.data, read(e));
  assert.ok(err <= B.tolerance * ref, `${label}: max error ${err} > ${B.tolerance} * ${ref}`);
  return err / ref;
}

for (const variant of variants()) {
  test(`${variant}: the OCR recognizer at three widths from one model, memory flat over 100 width changes`, async () => {
    const rt = await wasmrt.init({ variant });
    const model = await rt.load(B.ocr.path);
    assert.equal(model.dynamic, true);
    assert.deepEqual(model.inputs[0].bounds[3], [32, 1280]);
    for (const r of B.ocr.runs) {
      const out = await model.run({ x: tensor(r.x) });
      close(out[model.outputs[0].name], r.want, `width ${r.width}`);
      assert.deepEqual(model.inputs[0].shape, [1, 3, 48, r.width]);
      assert.deepEqual(model.outputs[0].shape, [1, r.width / 8, 6625]);
    }
    assert.throws(() => model.runSync({ x: { data: new Float32Array(3 * 48 * 2000), shape: [1, 3, 48, 2000] } }),
      (e) => e instanceof wasmrt.InputError && /\[1, 3, 48, 32\.\.1280\]/.test(e.message));
    assert.throws(() => model.resize({ x: [1, 3, 40, 100] }), wasmrt.InputError);
    const xs = B.ocr.alternate.map(tensor), mem = [];
    for (let k = 0; k < 100; k++) {
      model.runSync({ x: xs[k % 2] });
      mem.push(rt.memoryBytes);
    }
    assert.ok(mem.every((v) => v === mem[1]), `wasm memory grew: ${mem[1]} -> ${Math.max(...mem)}`);
    model.release();
  });

  test(`${variant}: streamed recurrent models (a PyTorch bidirectional LSTM, a TFLite LSTM)`, async () => {
    const rt = await wasmrt.init({ variant });
    for (const [key, outs] of [["lstm", ["y", "hn", "cn"]], ["tflite_lstm", ["y"]]]) {
      const model = await rt.load(B[key].path);
      const s = model.stream();
      B[key].steps.forEach((step, k) => {
        const out = s.stepSync({ x: tensor(step.x) });
        for (const o of outs) close(out[o], step.want[o], `${key} step ${k} ${o}`);
      });
      s.reset();
      const again = s.stepSync({ x: tensor(B[key].steps[0].x) });
      close(again.y, B[key].steps[0].want.y, `${key} after reset`);
      model.release();
    }
  });

  test(`${variant}: ViT- and BERT-style encoders`, async () => {
    const rt = await wasmrt.init({ variant });
    for (const [name, e] of Object.entries(B.encoders)) {
      const model = await rt.load(e.path);
      const feeds = Object.fromEntries(Object.entries(e.inputs).map(([k, v]) => [k, tensor(v)]));
      const out = await model.run(feeds);
      for (const [k, w] of Object.entries(e.want)) close(out[k], w, `${name} ${k}`);
      model.release();
    }
  });
}
