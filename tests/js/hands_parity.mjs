// wasmrt/vision's HandTracker and SelfieSegmenter (JS) against python_ref.vision, in Node: the models' outputs are
// those Python's pipelines got (tests/js/hands_replay.mjs checks every model input is bit-identical), so landmarks,
// crops, handedness, gestures, tracking, masks and composites must equal Python's. Run by tests/test_vision_hands_js.py.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  blurBackground, GESTURES, gesture, HandTracker, replaceBackground, SelfieSegmenter,
} from "../../js_bindings/vision/index.js";
import { replayRuntime } from "./hands_replay.mjs";

const DIR = process.env.HANDS_FIXTURES;
if (!DIR) throw new Error("HANDS_FIXTURES is not set: run through tests/test_vision_hands_js.py");
const M = JSON.parse(readFileSync(join(DIR, "hands.json"), "utf8"));
const raw = (f) => readFileSync(join(DIR, f));
const u8 = (f) => { const b = raw(f); return new Uint8Array(b.buffer, b.byteOffset, b.length); };
const typed = (T, f) => { const b = raw(f); return new T(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)); };
const TAPE = typed(Float32Array, M.tape);
const report = (kind, data) => console.log(`HANDS_REPORT ${JSON.stringify({ kind, ...data })}`);
const photo = (name) => { const p = M.photos[name]; return { data: u8(p.file), width: p.width, height: p.height }; };
const replay = (key) => replayRuntime(M.tapes[key], TAPE);
const TOL = 1e-9; // float64 arithmetic in the same order: equal up to the last bits

function maxDiff(a, b) {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** A JS hand against Python's (hands_fixtures.hand_json); returns the largest difference. */
function sameHand(js, py, where) {
  assert.equal(js.handedness, py.handedness, `${where}: handedness`);
  assert.equal(js.gesture, py.gesture, `${where}: gesture`);
  assert.equal(js.tracked, py.tracked, `${where}: tracked`);
  assert.equal(js.score, py.score, `${where}: presence`);
  const d = Math.max(maxDiff(js.landmarks, py.landmarks), maxDiff(js.worldLandmarks, py.world),
    maxDiff([js.roi.cx, js.roi.cy, js.roi.side, js.roi.angle], py.roi), Math.abs(js.handednessScore - py.handednessScore));
  assert.equal(js.detection === null, py.detection === null, `${where}: detection`);
  const dd = py.detection ? Math.max(maxDiff(js.detection.box, py.detection.box),
    maxDiff(js.detection.keypoints, py.detection.keypoints), Math.abs(js.detection.score - py.detection.score)) : 0;
  assert.ok(d < TOL && dd < TOL, `${where}: differs by ${Math.max(d, dd)}`);
  return Math.max(d, dd);
}

test("hands on photos: palms, crops, 21 landmarks, world landmarks, handedness, gestures equal Python's", async () => {
  for (const [name, want] of Object.entries(M.hands)) {
    const rt = replay(`hands:${name}`);
    const tracker = await HandTracker.create(rt, { modelBase: M.models, tracking: false, maxHands: 2 });
    const { hands, ranDetector } = await tracker.detect(photo(name));
    assert.ok(ranDetector && rt.done(), `${name}: ${rt.calls()} model calls, Python made ${M.tapes[`hands:${name}`].length}`);
    assert.equal(hands.length, want.length, `${name}: hands found`);
    let worst = 0;
    hands.forEach((h, k) => { worst = Math.max(worst, sameHand(h, want[k], `${name} hand ${k}`)); });
    report("photo", { name, hands: hands.length, gestures: hands.map((h) => h.gesture), maxDiff: worst });
  }
});

test("tracking on a clip: the same crops, hands and detector runs as Python's", async () => {
  const C = M.clip, all = u8(C.file), n = C.size * C.size * 4;
  const rt = replay("clip");
  const tracker = await HandTracker.create(rt, { modelBase: M.models, maxHands: 1 });
  let runs = 0, worst = 0;
  for (let t = 0; t < C.frames; t++) {
    const frame = { data: all.subarray(t * n, (t + 1) * n), width: C.size, height: C.size };
    const { hands, ranDetector } = await tracker.detect(frame);
    const py = C.results[t];
    assert.equal(ranDetector, py.ranDetector, `frame ${t}: detector`);
    assert.equal(hands.length, py.hands.length, `frame ${t}: hands`);
    hands.forEach((h, k) => { worst = Math.max(worst, sameHand(h, py.hands[k], `frame ${t}`)); });
    runs += ranDetector;
  }
  assert.ok(rt.done());
  assert.ok(runs / C.frames <= 0.1, `the detector ran on ${runs} of ${C.frames} frames`);
  report("clip", { frames: C.frames, detectorRuns: runs, maxDiff: worst });
});

test("max 2 hands on the clip: the detector every frame, the tracked crop replacing the palm's", async () => {
  const C = M.clip, all = u8(C.file), n = C.size * C.size * 4;
  const rt = replay("clip2");
  const tracker = await HandTracker.create(rt, { modelBase: M.models, maxHands: 2 });
  let tracked = 0;
  for (let t = 0; t < C.twoHands.length; t++) {
    const { hands, ranDetector } = await tracker.detect({ data: all.subarray(t * n, (t + 1) * n), width: C.size, height: C.size });
    const py = C.twoHands[t];
    assert.ok(ranDetector && py.ranDetector);
    assert.equal(hands.length, py.hands.length, `frame ${t}: hands`);
    hands.forEach((h, k) => { sameHand(h, py.hands[k], `frame ${t}`); tracked += h.tracked; });
  }
  assert.ok(rt.done() && tracked >= C.twoHands.length - 1, `${tracked} tracked hands`);
});

test("lite models: the same hands as Python's", async () => {
  const L = M.lite, rt = replay("lite");
  const tracker = await HandTracker.create(rt, { modelBase: M.models, lite: true, tracking: false });
  const { hands } = await tracker.detect(photo(L.photo));
  assert.ok(rt.done());
  assert.equal(hands.length, L.hands.length);
  hands.forEach((h, k) => sameHand(h, L.hands[k], `lite hand ${k}`));
});

test("gestures on landmark sets equal Python's, every gesture among them", () => {
  const G = M.gestures, image = typed(Float64Array, G.image), world = typed(Float64Array, G.world);
  const seen = new Set();
  for (let k = 0; k < G.n; k++) {
    const got = gesture(image.subarray(63 * k, 63 * k + 63), world.subarray(63 * k, 63 * k + 63));
    assert.equal(got, G.names[k], `set ${k}`);
    seen.add(got);
  }
  for (const g of GESTURES) assert.ok(seen.has(g), `no set makes ${g}`);
  report("gestures", { sets: G.n, kinds: [...seen].length });
});

test("segmentation on photos: masks, replaced and blurred backgrounds equal Python's", async () => {
  for (const [name, want] of Object.entries(M.segments)) {
    const rt = replay(`seg:${name}`);
    const seg = await SelfieSegmenter.create(rt, { modelBase: M.models, smoothing: 0 });
    const frame = photo(name);
    const { mask, model } = await seg.segment(frame);
    assert.ok(rt.done());
    const got = { mask: mask.data, replaced: replaceBackground(frame, mask, M.background).data,
      blurred: blurBackground(frame, mask).data };
    for (const [k, a] of Object.entries(got)) {
      const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      assert.equal(createHash("sha256").update(bytes).digest("hex"), want.sha256[k], `${name}: ${k} bytes`);
    }
    report("segment", { name, model, width: frame.width, height: frame.height });
  }
});

test("smoothing over frames equals Python's", async () => {
  const S = M.smooth, n = S.size * S.size, frames = u8(S.frames), masks = u8(S.masks);
  const seg = await SelfieSegmenter.create(replay("smooth"), { modelBase: M.models });
  for (let t = 0; t < S.n; t++) {
    const { mask } = await seg.segment({ data: frames.subarray(4 * n * t, 4 * n * (t + 1)), width: S.size, height: S.size });
    assert.deepEqual(new Uint8Array(mask.data.buffer), masks.subarray(4 * n * t, 4 * n * (t + 1)), `frame ${t}`);
  }
});

test("bad frames and options are refused with a clear error", async () => {
  const tracker = await HandTracker.create(replay("clip"), { modelBase: M.models });
  await assert.rejects(tracker.detect({ data: new Uint8Array(0), width: 0, height: 0 }), /HandTracker.detect needs/);
  await assert.rejects(HandTracker.create(replay("clip"), { modelBase: M.models, maxHands: 0 }), /maxHands/);
  await assert.rejects(SelfieSegmenter.create(replay("clip"), { model: "portrait" }), /auto, general or landscape/);
  const f = photo("messi5.jpg");
  assert.throws(() => replaceBackground(f, new Float32Array(3), [0, 0, 0]), /differ in size/);
});

// The very module Python's wasm engine runs (wasmtime): the committed wasmrt/engines/dist build.
const DIST = fileURLToPath(new URL("../../wasmrt/engines/dist/", import.meta.url));
const E = M.engine;
describe(`with the wasm engine (${E.variant}) in Node`, {
  skip: !existsSync(join(DIST, `wasmrt-${E.variant}.wasm`)) && "wasmrt/engines/dist has no engine",
}, () => {
  test("hands and masks equal Python's on the same engine build", async () => {
    const wasmrt = await import("../../js_bindings/src/index.js");
    const rt = await wasmrt.init({ variant: E.variant, wasmPaths: DIST });
    const tracker = await HandTracker.create(rt, { modelBase: M.models + "/", tracking: false, maxHands: 2 });
    for (const [name, want] of Object.entries(E.hands)) {
      const { hands } = await tracker.detect(photo(name));
      assert.equal(hands.length, want.length, `${name}: hands found`);
      let worst = 0;
      hands.forEach((h, k) => { worst = Math.max(worst, sameHand(h, want[k], `${name} hand ${k}`)); });
      report("engine-hands", { variant: E.variant, name, hands: hands.length, maxDiff: worst });
    }
    const seg = await SelfieSegmenter.create(rt, { modelBase: M.models + "/", smoothing: 0 });
    for (const [name, file] of Object.entries(E.segments)) {
      const { mask, model } = await seg.segment(photo(name));
      assert.deepEqual(new Uint8Array(mask.data.buffer), u8(file), `${name}: mask bytes`);
      report("engine-segment", { variant: E.variant, name, model });
    }
  });
});
