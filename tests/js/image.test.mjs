// image.pixelsToTensor must reproduce wasmrt/preprocess.py bit for bit (same pixels in, same float32 bits out).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { FIXTURES, manifest, readArray } from "./helpers.mjs";

test("pixelsToTensor is bit-identical to preprocess.image_to_tensor for every model and image", () => {
  assert.ok(manifest.images.length >= 8);
  for (const c of manifest.images) {
    const rgb = readFileSync(`${FIXTURES}/${c.rgb}`);
    // as RGBA too (what canvas ImageData gives): alpha is ignored
    const rgba = new Uint8ClampedArray(c.width * c.height * 4).fill(255);
    for (let i = 0; i < c.width * c.height; i++) rgba.set(rgb.subarray(i * 3, i * 3 + 3), i * 4);
    const want = readArray(c.tensor);
    for (const pixels of [{ data: rgb, width: c.width, height: c.height, channels: 3 }, { data: rgba, width: c.width, height: c.height }]) {
      const t = wasmrt.image.pixelsToTensor(pixels, c.pre, c.shape);
      assert.deepEqual(t.shape, c.shape);
      const a = new Uint32Array(t.data.buffer), b = new Uint32Array(want.buffer, want.byteOffset, want.length);
      let diff = 0;
      for (let i = 0; i < b.length; i++) if (a[i] !== b[i]) diff++;
      assert.equal(diff, 0, `${c.image} -> ${c.model} (${c.pre.resize}): ${diff} of ${b.length} values differ`);
    }
  }
});

test("geometry maps tensor pixels back to the image (letterbox and crop)", () => {
  const lb = wasmrt.image.plan(300, 451, { resize: "letterbox" }, 128, 128);
  assert.deepEqual([lb.dstTop, lb.dstLeft, lb.dstH, lb.dstW], [21, 0, 85, 128]);
  assert.deepEqual(wasmrt.image.toSource(lb, 0, lb.dstTop), [0, 0]);
  assert.deepEqual(wasmrt.image.toSource(lb, 128, lb.dstTop + lb.dstH), [451, 300]);
  const crop = wasmrt.image.plan(300, 451, { resize: "crop", cropFraction: 0.875 }, 224, 224);
  assert.deepEqual([crop.srcH, crop.srcW, crop.srcTop, crop.srcLeft], [263, 263, 18, 94]);
});

test("toTensor explains what is wrong", async () => {
  const model = { inputs: [{ name: "x", shape: [1, 8, 8, 3], dtype: "float32" }], metadata: { preprocess: {} } };
  const px = { data: new Uint8Array(4 * 4 * 4), width: 4, height: 4 };
  await assert.rejects(wasmrt.image.toTensor(px, model), /no preprocessing hints for input 'x'/);
  await assert.rejects(wasmrt.image.toTensor(px, model, { input: "y" }), /no input "y"/);
  await assert.rejects(wasmrt.image.toTensor({}, model, { preprocess: {} }), /image.toTensor needs ImageData/);
  const pre = { layout: "NHWC", color: "RGB", mean: [0, 0, 0], std: [1, 1, 1], resize: "stretch" };
  const t = await wasmrt.image.toTensor(px, model, { preprocess: pre });
  assert.deepEqual(t.shape, [1, 8, 8, 3]);
  assert.throws(() => wasmrt.image.pixelsToTensor(px, { ...pre, resize: "zoom" }, [1, 8, 8, 3]), /unknown resize mode "zoom"/);
});
