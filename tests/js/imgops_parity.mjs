// The engine's image operations (js_bindings/vision/imgops.js over wrt_img_*) against the JS ports (sample.js,
// segment.js, themselves tested bit for bit against python_ref) on random images, in every wasm module of
// wasmrt/engines/dist, and hostile arguments. Run by tests/test_vision_imgops.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import * as wasmrt from "../../js_bindings/src/index.js";
import { cropRows, EngineOps, engineOps, MASK_ENGINE, modelInput } from "../../js_bindings/vision/imgops.js";
import { sampleRect } from "../../js_bindings/vision/sample.js";
import { blurBackground, boxBlur, composite, replaceBackground, resizeMask, SelfieSegmenter, smooth } from "../../js_bindings/vision/segment.js";

const MODEL = readFileSync(fileURLToPath(new URL("../../models/face_detector.wrt", import.meta.url)));
const DIST = fileURLToPath(new URL("../../wasmrt/engines/dist/", import.meta.url));
const VARIANTS = (process.env.IMGOPS_VARIANTS ?? "scalar,simd,relaxed").split(",");
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const bytes = (n) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
const image = (w, h, c) => ({ data: bytes(w * h * c), width: w, height: h, channels: c });
const same = (a, b, what) => assert.deepEqual(new Uint8Array(a.buffer, a.byteOffset, a.byteLength),
  new Uint8Array(b.buffer, b.byteOffset, b.byteLength), what);

for (const variant of VARIANTS) {
  test(`engine image operations equal the JS ports (${variant})`, async () => {
    const rt = await wasmrt.init({ variant, wasmPaths: DIST });
    const ops = new EngineOps(rt);
    for (const [w, h, c] of [[1, 1, 3], [37, 23, 4], [64, 48, 3], [5, 91, 4]]) {
      const img = image(w, h, c);
      for (const [cx, cy, rw, rh, a, nW, nH, border] of [[w / 2, h / 2, w, h, 0, 16, 16, "zero"],
        [w * 0.3, h * 0.6, w * 0.8, h * 1.3, 0.7, 24, 19, "replicate"], [-3, h + 2, 2 * w, h, -2.9, 9, 31, "zero"],
        [w / 2, h / 2, Math.max(w, h), Math.max(w, h), Math.PI / 2, 33, 33, "replicate"]]) {
        const want = sampleRect(img, cx, cy, rw, rh, a, nW, nH, border);
        same(ops.crop(img, cx, cy, rw, rh, a, nW, nH, border, null, null), want, `crop ${w}x${h}x${c}`);
        const wantF = Float32Array.from(want, (v) => Math.fround((v - 127.5) / 127.5));
        same(ops.crop(img, cx, cy, rw, rh, a, nW, nH, border, 127.5, 127.5), wantF, "crop normalised");
      }
      const small = Float32Array.from({ length: 7 * 5 }, () => rand() * 1.2 - 0.1);
      const big = resizeMask(small, 7, 5, w, h);
      same(ops.resizeMask(small, 7, 5, w, h), big, "resizeMask");
      const prev = Float32Array.from({ length: w * h }, rand);
      same(ops.smooth(big, prev, 0.7), smooth(big, prev, 0.7), "smooth");
      same(ops.smooth(big, null, 0.7), big, "smooth without a previous mask");
      big[0] = NaN;
      const bg = image(w, h, 3);
      const m = { data: big, width: w, height: h };
      const js = composite(img, m, bg), en = ops.composite(img, big, bg);
      same(en.data, js.data, "composite");
      same(ops.composite(img, big, [0, 177, 64]).data, replaceBackground(img, m, [0, 177, 64]).data, "composite colour");
      same(ops.composite(img, big, [300, -5, 1.5]).data, replaceBackground(img, m, [300, -5, 1.5]).data, "odd colour");
      // options.out: the same bytes written into the caller's array, by the engine and by the JS port, in place too
      const em = { data: big, width: w, height: h, [MASK_ENGINE]: ops }, C = img.channels;
      for (const [mask, who] of [[m, "JS"], [em, "engine"]]) {
        const out = new Uint8ClampedArray(w * h * C).fill(7), r = composite(img, mask, bg, { out });
        assert.equal(r.data, out, `${who}: the result is out`);
        same(out, js.data, `composite into out (${who})`);
        same(replaceBackground(img, mask, [0, 177, 64], { out }).data, replaceBackground(img, m, [0, 177, 64]).data,
          `replaceBackground into out (${who})`);
        same(blurBackground(img, mask, { radius: 3, out }).data, blurBackground(img, m, { radius: 3 }).data,
          `blurBackground into out (${who})`);
        const own = { ...img, data: img.data.slice() };
        same(composite(own, mask, bg, { out: own.data }).data, js.data, `composite in place (${who})`);
        assert.throws(() => composite(img, mask, bg, { out: new Uint8Array(w * h * C - 1) }), /options.out must be/);
        assert.throws(() => replaceBackground(img, mask, "#00ff00", { out: new Float32Array(w * h * C) }),
          /options.out must be/);
      }
      same(ops.maskFrame(small, 7, 5, w, h, prev, 0.7), smooth(resizeMask(small, 7, 5, w, h), prev, 0.7), "maskFrame");
      same(ops.maskFrame(small, 7, 5, w, h, null, 0.7), resizeMask(small, 7, 5, w, h), "maskFrame, first frame");
      for (const r of [0, 1, 4, 8, 127]) same(ops.boxBlur(img, r, 2).data, boxBlur(img, r, 2).data, `boxBlur r=${r}`);
    }
    // hostile arguments: errors naming the problem, never a read past a buffer
    const img = image(8, 8, 4);
    assert.throws(() => ops.crop({ ...img, width: 9 }, 4, 4, 8, 8, 0, 4, 4, "zero", 0, 255), /source holds 256 bytes/);
    assert.throws(() => ops.crop(img, NaN, 4, 8, 8, 0, 4, 4, "zero", 0, 255), /must be finite/);
    assert.throws(() => ops.crop(img, 4, 4, 8, 8, 0, 0, 4, "zero", 0, 255), /size 0x4/);
    assert.throws(() => ops.crop(img, 4, 4, 8, 8, 0, 4, 4, "zero", 0, 0), /non-zero divisor/);
    assert.throws(() => ops.boxBlur(img, 128, 2), /radius must be 0..127/);
    assert.throws(() => ops.composite(img, new Float32Array(64), { ...image(8, 8, 3), channels: 5 }), /channels must be 3 or 4/);
    const ex = rt._ex;
    assert.notEqual(ex.wrt_img_resize_mask(64, 3, 2, 2, 128, 16, 2, 2), 0, "a mask buffer too small");
    assert.match(rt._message(), /source holds 3 bytes, needs 16/);
    assert.notEqual(ex.wrt_img_smooth(0, 0, 64, 4, 0.7, 1, 1, 1, 1, 1), 0, "a NULL mask");
    assert.notEqual(ex.wrt_img_smooth(66, 0, 64, 4, 0.7, 1, 1, 1, 1, 1), 0, "a misaligned mask");
    assert.equal(ex.wrt_img_box_blur_scratch(0, 5), 0);
    same(ops.crop(img, 4, 4, 8, 8, 0, 4, 4, "zero", null, null), sampleRect(img, 4, 4, 8, 8, 0, 4, 4, "zero"), "still usable");
    // a module without the image operations (built for given models), a Worker client's model: the JS code
    assert.equal(engineOps({ _rt: { _ex: { wrt_run() {} } } }), null);
    assert.equal(engineOps({ run() {} }), null);
    assert.ok(engineOps(rt.loadBytes(MODEL)) instanceof EngineOps);
  });
}

test("crops copy only the frame rows their taps reach: two frames in turn, every rect exact", async () => {
  // the rows left out hold the other frame's pixels (the same wasm block, reused): a row the engine reads that was
  // not copied shows as a difference
  const rt = await wasmrt.init({ variant: "relaxed", wasmPaths: DIST });
  const ops = new EngineOps(rt), W = 61, H = 97;
  const frames = [image(W, H, 4), image(W, H, 4), image(W, H, 3), image(W, H, 3)];
  let banded = 0;
  for (let k = 0; k < 400; k++) {
    const img = frames[(k % 2) + (k >= 200 ? 2 : 0)];
    const cx = rand() * 90 - 15, cy = rand() * 130 - 17, w = 2 + rand() * 60, h = 2 + rand() * 60;
    const angle = k % 5 === 0 ? 0 : k % 7 === 0 ? Math.PI / 2 : (rand() - 0.5) * 7;
    const border = k % 3 ? "replicate" : "zero";
    const [r0, r1] = cropRows(H, cy, w, h, Math.cos(angle), Math.sin(angle));
    banded += r1 - r0 < H;
    same(ops.crop(img, cx, cy, w, h, angle, 11, 9, border, null, null), sampleRect(img, cx, cy, w, h, angle, 11, 9, border),
      `crop ${k} (${cx}, ${cy}, ${w} x ${h}, ${angle}, rows ${r0}..${r1})`);
  }
  assert.ok(banded > 300, `${banded} of 400 crops copied a band of rows`);
  // into an array in engine memory (a model's inputView): written there, the result a view of the same block
  const p = rt._alloc(11 * 9 * 3 * 4, "a crop's output"), img = frames[0];
  const got = ops.crop(img, 30, 40, 50, 45, 0.4, 11, 9, "replicate", 0, 255, new Float32Array(rt._ex.memory.buffer, p, 11 * 9 * 3));
  assert.equal(got.byteOffset, p);
  same(got, Float32Array.from(sampleRect(img, 30, 40, 50, 45, 0.4, 11, 9, "replicate"), (v) => Math.fround(v / 255)), "in place");
  rt._ex.wrt_free(p);
  // where a pipeline crops a model's input: the model's own buffer when it has one of the size, else its own array
  const own = {}, mine = new Float32Array(12);
  assert.equal(modelInput({ inputView: () => mine }, 12, ops, own, "k"), mine);
  assert.equal(modelInput({ inputView: () => mine }, 12, null, own, "k"), own.k);
  assert.equal(modelInput({ inputView: () => new Float32Array(5) }, 12, ops, own, "k"), own.k);
  assert.equal(modelInput({ inputView: () => { throw new Error("float16"); } }, 12, ops, own, "k"), own.k);
  assert.equal(modelInput({}, 12, ops, own, "k"), own.k);
  assert.ok(own.k instanceof Float32Array && own.k.length === 12);
  assert.deepEqual(cropRows(H, -500, 10, 10, 1, 0), [0, 1]);
  assert.deepEqual(cropRows(H, 900, 10, 10, 1, 0), [H - 1, H]);
  assert.deepEqual(cropRows(H, NaN, 10, 10, 1, 0), [0, H]);
});

test("a segmenter's mask into options.out: the same masks frame after frame, engine and JS", async () => {
  const rt = await wasmrt.init({ variant: "relaxed", wasmPaths: DIST });
  const engine = rt.loadBytes(MODEL); // only its runtime: the segmenter's image operations run there
  const masks = [0, 1, 2].map(() => Float32Array.from({ length: 256 * 256 }, rand));
  const runner = () => { // the general model's masks, one per frame, in order
    let k = 0;
    return { _rt: engine._rt, run: async () => ({ activation_10: { data: masks[k++ % masks.length] } }) };
  };
  const img = image(40, 40, 4), want = [], plain = new SelfieSegmenter({ general: runner() }, { imageOps: "js" });
  for (let f = 0; f < 3; f++) want.push((await plain.segment(img)).mask.data);
  for (const imageOps of ["engine", "js"]) {
    const seg = new SelfieSegmenter({ general: runner() }, { imageOps }), out = new Float32Array(40 * 40);
    for (let f = 0; f < 3; f++) {
      const { mask } = await seg.segment(img, { out });
      assert.equal(mask.data, out);
      same(out, want[f], `frame ${f} into out (${imageOps})`);
    }
    await assert.rejects(seg.segment(img, { out: new Float32Array(7) }), /options.out must be a Float32Array/);
  }
});

test("a segmenter smooths with its own previous mask: what the caller writes into a mask does not change the next", async () => {
  const rt = await wasmrt.init({ variant: "relaxed", wasmPaths: DIST });
  const engine = rt.loadBytes(MODEL);
  const masks = [0, 1, 2, 3].map(() => Float32Array.from({ length: 256 * 256 }, rand));
  const runner = () => {
    let k = 0;
    return { _rt: engine._rt, run: async () => ({ activation_10: { data: masks[k++ % masks.length] } }) };
  };
  const img = image(40, 40, 4), want = [], plain = new SelfieSegmenter({ general: runner() }, { imageOps: "js" });
  for (let f = 0; f < 3; f++) want.push(Float32Array.from((await plain.segment(img)).mask.data));
  plain.reset();
  const fresh = (await plain.segment(img)).mask.data; // after reset: the fourth mask unsmoothed
  for (const imageOps of ["engine", "js"]) {
    for (const withOut of [false, true]) {
      const seg = new SelfieSegmenter({ general: runner() }, { imageOps }), out = new Float32Array(40 * 40);
      for (let f = 0; f < 3; f++) {
        const { mask } = await seg.segment(img, withOut ? { out } : {});
        same(mask.data, want[f], `frame ${f} (${imageOps}, out ${withOut})`);
        mask.data.fill(f % 2 ? NaN : 0.25); // the caller draws on its mask
      }
      seg.reset();
      same((await seg.segment(img, withOut ? { out } : {})).mask.data, fresh, `after reset (${imageOps})`);
      await seg.release();
    }
    for (const smoothing of [NaN, -0.1, 1.5]) {
      assert.throws(() => new SelfieSegmenter({ general: runner() }, { imageOps, smoothing }), /smoothing ratio must be in \[0, 1\]/);
    }
  }
  assert.throws(() => smooth(masks[0], masks[1], NaN), /smooth: the smoothing ratio/);
});

test("a segmenter's replaceBackground / blurBackground: segment() then the compositing's bytes, engine and JS", async () => {
  const rt = await wasmrt.init({ variant: "relaxed", wasmPaths: DIST });
  const engine = rt.loadBytes(MODEL);
  // the general model's masks, one per frame: runs of exactly 0 and 1 (a saturated sigmoid) and values between
  const masks = [0, 1, 2, 3].map((f) => Float32Array.from({ length: 256 * 256 }, (_, i) =>
    ((i >> 8) + f) % 64 < 20 ? 0 : (i & 255) > 150 ? 1 : rand()));
  const runner = () => {
    let k = 0;
    return { _rt: engine._rt, run: async () => ({ activation_10: { data: masks[k++ % masks.length] } }) };
  };
  const W = 50, H = 40; // the general model's shape (landscape beyond 4:3)
  for (const C of [4, 3]) {
    const frames = [0, 1, 2, 3].map(() => image(W, H, C)), photo = image(W, H, 4);
    const backgrounds = ["#00b140", [10, 20, 30], photo, undefined]; // undefined: blurBackground
    const plain = new SelfieSegmenter({ general: runner() }, { imageOps: "js" }), want = [];
    for (let f = 0; f < 4; f++) {
      const { mask } = await plain.segment(frames[f]);
      const bg = backgrounds[f];
      want.push({ mask: Float32Array.from(mask.data), image: bg === undefined
        ? blurBackground(frames[f], mask, { radius: 3 }).data : replaceBackground(frames[f], mask, bg).data });
    }
    for (const imageOps of ["engine", "js"]) {
      const seg = new SelfieSegmenter({ general: runner() }, { imageOps }), out = new Uint8ClampedArray(W * H * C);
      for (let f = 0; f < 4; f++) {
        const bg = backgrounds[f], options = f % 2 ? { mask: true } : { out, mask: new Float32Array(W * H) };
        const r = bg === undefined ? await seg.blurBackground(frames[f], { radius: 3, ...options })
          : await seg.replaceBackground(frames[f], bg, options);
        same(r.image.data, want[f].image, `frame ${f} composited (${imageOps}, ${C} channels)`);
        same(r.mask.data, want[f].mask, `frame ${f} mask (${imageOps})`);
        if (options.out) assert.equal(r.image.data, out);
        assert.equal(r.model, "general");
      }
      const none = await seg.replaceBackground(frames[0], "#000000");
      assert.equal(none.mask, null);
      await assert.rejects(seg.replaceBackground(frames[0], "#000000", { mask: new Float32Array(3) }),
        /SelfieSegmenter.replaceBackground: options.mask must be a Float32Array of 2000 values/);
      await assert.rejects(seg.replaceBackground(frames[0], image(W + 1, H, 4)), /differ in size/);
      await assert.rejects(seg.blurBackground(frames[0], { radius: 500 }), /radius must be an integer 0..127/);
      await assert.rejects(seg.replaceBackground(frames[0], "#00b140", { out: new Uint8Array(5) }), /options.out must be/);
      await seg.release();
    }
  }
  // two frames in flight on one segmenter: each composites its own frame
  const seg = new SelfieSegmenter({ general: runner() }), a = image(W, H, 4), b = image(W, H, 4);
  const [ra, rb] = await Promise.all([seg.replaceBackground(a, [0, 0, 0], { mask: true }),
    seg.replaceBackground(b, [0, 0, 0], { mask: true })]);
  same(ra.image.data, replaceBackground(a, ra.mask, [0, 0, 0]).data, "first of two in flight");
  same(rb.image.data, replaceBackground(b, rb.mask, [0, 0, 0]).data, "second of two in flight");
});
