// wasmrt.vision (JS) against python_ref.vision, in Node. Run by tests/test_vision_js.py with VISION_FIXTURES set.
//  - python_ref bridge: the models run in python_ref, so the JS pipeline must match Python to rounding.
//  - wasm engine (when js_bindings/dist has it): the acceptance tolerances (0.5 px, IoU 0.95, tracking).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { clipFrame, FaceMesh, lipMask, recolorLips } from "../../js_bindings/vision/index.js";
import { linearToSrgb8, srgb8 } from "../../js_bindings/vision/lips.js";
import { pythonRuntime } from "./vision_bridge.mjs";

const DIR = process.env.VISION_FIXTURES;
if (!DIR) throw new Error("VISION_FIXTURES is not set: run through tests/test_vision_js.py");
const M = JSON.parse(readFileSync(join(DIR, "vision.json"), "utf8"));
const bytes = (f) => { const b = readFileSync(join(DIR, f)); return new Uint8Array(b.buffer, b.byteOffset, b.length); };
const f64 = (f) => { const b = readFileSync(join(DIR, f)); return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)); };
const report = (kind, data) => console.log(`VISION_REPORT ${JSON.stringify({ kind, ...data })}`);

const A = M.astronaut;
const astronaut = () => ({ data: bytes(A.file), width: A.width, height: A.height });
const N = 468;

/** mean and max distance (x, y) between two 468*3 landmark arrays */
function lmErr(a, b) {
  let sum = 0, max = 0;
  for (let i = 0; i < N; i++) {
    const d = Math.hypot(a[3 * i] - b[3 * i], a[3 * i + 1] - b[3 * i + 1]);
    sum += d; max = Math.max(max, d);
  }
  return { mean: sum / N, max };
}

/** IoU of a region mask from lipMask against a full-image 0/1 mask */
function iouFull(m, full, W) {
  let inter = 0, union = 0, count = 0;
  const ours = new Uint8Array(full.length);
  for (let y = 0; y < m.h; y++) for (let x = 0; x < m.w; x++) ours[(m.y0 + y) * W + m.x0 + x] = m.data[y * m.w + x];
  for (let i = 0; i < full.length; i++) {
    inter += ours[i] & full[i]; union += ours[i] | full[i]; count += ours[i];
  }
  return { iou: union ? inter / union : 1, pixels: count };
}

const clipFrames = () => Array.from({ length: M.clip.frames }, (_, t) => clipFrame(astronaut(), t, M.clip.frames, M.clip.size));

async function track(mesh, frames) {
  const out = [];
  let runs = 0;
  for (const f of frames) {
    const r = await mesh.detect(f);
    assert.equal(r.faces.length, 1);
    runs += r.ranDetector;
    out.push(r.faces[0].landmarks);
  }
  return { landmarks: out, fraction: runs / frames.length };
}

test("the test clip is byte-identical to Python's", () => {
  for (const t of M.clip.check) {
    const js = clipFrame(astronaut(), t, M.clip.frames, M.clip.size).data, py = bytes(`clip_${t}.rgba`);
    let off = 0, big = 0;
    for (let i = 0; i < py.length; i++) { const d = Math.abs(js[i] - py[i]); off += d > 0; big += d > 1; }
    assert.equal(big, 0, `frame ${t}: bytes off by more than 1`);
    assert.ok(off <= py.length * 1e-4, `frame ${t}: ${off} bytes differ`);
    report("clip-bytes", { frame: t, differing: off });
  }
});

test("the recolouring's sRGB bytes by thresholds equal linearToSrgb8's at every step", () => {
  // each byte's step: the doubles within 40 ulps of where s(v) * 255 + 0.5 crosses k, by the formula; a grid; outside
  const bits = new BigInt64Array(1), f = new Float64Array(bits.buffer);
  const ulps = (x, n) => { f[0] = x; bits[0] += BigInt(n); return f[0]; };
  const values = [-1, -0, 0, 1, 2, 0.0031308, Infinity, -Infinity];
  for (let k = 1; k < 256; k++) {
    const s = (k - 0.5) / 255, x = s <= 0.0031308 * 12.92 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    for (let n = -40; n <= 40; n++) values.push(ulps(x, n));
  }
  for (let i = 0; i <= 100000; i++) values.push(i / 100000);
  let off = 0;
  for (const v of values) off += srgb8(v) !== linearToSrgb8(v);
  assert.equal(off, 0, `${off} of ${values.length} values differ`);
  assert.ok(Number.isNaN(srgb8(NaN)) && Number.isNaN(linearToSrgb8(NaN)));
});

test("lip mask and recolouring from Python's landmarks match Python", () => {
  const lm = Float64Array.from(A.landmarks);
  const m = lipMask(lm, A.width, A.height);
  const { iou } = iouFull(m, bytes(A.mask), A.width);
  assert.equal(iou, 1, "same landmarks must give the same mask");
  const img = astronaut();
  recolorLips(img, lm, A.paint);
  const py = bytes(A.painted);
  let off = 0, big = 0;
  for (let i = 0; i < py.length; i++) { const d = Math.abs(img.data[i] - py[i]); off += d > 0; big += d > 1; }
  assert.equal(big, 0);
  assert.ok(off <= 20, `${off} bytes off by 1`);
  report("paint-parity", { differingBytes: off });
});

describe("with python_ref models (bridge)", () => {
  const rt = pythonRuntime(process.env.WASMRT_PYTHON);
  after(() => rt.close());

  test("astronaut: detection, crop and landmarks equal Python's", async () => {
    const mesh = await FaceMesh.create(rt, { modelBase: M.models + "/", tracking: false });
    const { faces, ranDetector } = await mesh.detect(astronaut());
    assert.equal(faces.length, 1);
    assert.ok(ranDetector);
    const f = faces[0];
    for (let k = 0; k < 4; k++) assert.ok(Math.abs(f.detection.box[k] - A.detection.box[k]) < 1e-6);
    assert.ok(Math.abs(f.detection.score - A.detection.score) < 1e-9);
    const roi = [f.roi.cx, f.roi.cy, f.roi.side, f.roi.angle];
    roi.forEach((v, k) => assert.ok(Math.abs(v - A.roi[k]) < 1e-9, `roi[${k}] ${v} vs ${A.roi[k]}`));
    const e = lmErr(f.landmarks, A.landmarks);
    assert.ok(e.max < 1e-3, `landmarks differ by ${e.max} px`);
    const { iou } = iouFull(lipMask(f, A.width, A.height), bytes(A.mask), A.width);
    assert.ok(iou > 0.999, `IoU ${iou}`);
    report("bridge-astronaut", { meanPx: e.mean, maxPx: e.max, iou });
  });

  test("clip: tracking matches Python's tracking and detect-every-frame", async () => {
    const frames = clipFrames();
    const opts = { modelBase: M.models + "/" };
    const tracked = await track(await FaceMesh.create(rt, opts), frames);
    const every = await track(await FaceMesh.create(rt, { ...opts, tracking: false }), frames);
    const pyTracked = f64(M.clip.tracked), pyEvery = f64(M.clip.every);
    let vsPython = 0, vsEvery = 0;
    tracked.landmarks.forEach((lm, t) => {
      vsPython = Math.max(vsPython, lmErr(lm, pyTracked.subarray(t * 3 * N, (t + 1) * 3 * N)).max);
      vsPython = Math.max(vsPython, lmErr(every.landmarks[t], pyEvery.subarray(t * 3 * N, (t + 1) * 3 * N)).max);
      vsEvery += lmErr(lm, every.landmarks[t]).mean / frames.length;
    });
    const pyFraction = M.clip.ranDetector.filter(Boolean).length / M.clip.frames;
    assert.equal(tracked.fraction, pyFraction);
    assert.ok(vsPython < 0.01, `JS and Python landmarks differ by ${vsPython} px`);
    assert.ok(tracked.fraction < 0.2 && vsEvery < 1, `detector on ${tracked.fraction}, error ${vsEvery} px`);
    report("bridge-tracking", { detectorFraction: tracked.fraction, meanPxVsEveryFrame: vsEvery, maxPxVsPython: vsPython });
  });
});

const DIST = fileURLToPath(new URL("../../js_bindings/dist/", import.meta.url));
const haveEngine = ["scalar", "simd"].every((v) => existsSync(join(DIST, `wasmrt-${v}.wasm`)));

describe("with the wasm engine", { skip: !haveEngine && "js_bindings/dist has no engine yet" }, () => {
  for (const variant of (process.env.VISION_VARIANTS ?? "simd,scalar").split(",")) {
    test(`${variant}: astronaut within 0.5 px and IoU >= 0.95 of Python; tracking on the clip`, async () => {
      const wasmrt = await import("../../js_bindings/src/index.js");
      const rt = await wasmrt.init({ variant });
      const mesh = await FaceMesh.create(rt, { modelBase: M.models + "/", tracking: false });
      const { faces, ms } = await mesh.detect(astronaut());
      assert.equal(faces.length, 1);
      const e = lmErr(faces[0].landmarks, A.landmarks);
      const { iou } = iouFull(lipMask(faces[0], A.width, A.height), bytes(A.mask), A.width);
      assert.ok(e.mean < 0.5, `mean landmark error ${e.mean} px`);
      assert.ok(iou >= 0.95, `lip mask IoU ${iou}`);
      const frames = clipFrames();
      const tracked = await track(await FaceMesh.create(rt, { modelBase: M.models + "/" }), frames);
      const every = await track(mesh, frames);
      let vsEvery = 0;
      tracked.landmarks.forEach((lm, t) => { vsEvery += lmErr(lm, every.landmarks[t]).mean / frames.length; });
      assert.ok(tracked.fraction < 0.2 && vsEvery < 1, `detector on ${tracked.fraction}, error ${vsEvery} px`);
      report("engine", { variant, meanPx: e.mean, maxPx: e.max, iou, ms, detectorFraction: tracked.fraction,
        meanPxVsEveryFrame: vsEvery });
    });
  }
});
