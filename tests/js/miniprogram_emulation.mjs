// The real mini-program page and worker (demo/miniprogram, built by build.mjs) on the emulated WeChat and Alipay
// hosts (tests/js/miniprogram_emulator.mjs), fed astronaut camera frames; results must equal the browser pipeline's
// (wasmrt.vision on the standard host, same engine variant). Run by tests/test_miniprogram.py.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, test } from "node:test";

import { build } from "../../demo/miniprogram/build.mjs";
import { init } from "../../js_bindings/src/index.js";
import { clipFrame, FaceMesh, recolorLips } from "../../js_bindings/vision/index.js";
import { miniProgramHost } from "../../js_bindings/hosts/miniprogram.js";
import { MiniProgram, moduleGraph } from "./miniprogram_emulator.mjs";

const DIR = process.env.VISION_FIXTURES;
if (!DIR) throw new Error("VISION_FIXTURES is not set: run through tests/test_miniprogram.py");
const M = JSON.parse(readFileSync(join(DIR, "vision.json"), "utf8"));
const report = (kind, data) => console.log(`VISION_REPORT ${JSON.stringify({ kind, ...data })}`);
const raw = readFileSync(join(DIR, M.astronaut.file));
const ASTRO = { data: new Uint8Array(raw.buffer, raw.byteOffset, raw.length), width: M.astronaut.width, height: M.astronaut.height };
const WORK = mkdtempSync(join(tmpdir(), "wasmrt-mp-"));
const open = [];
after(() => {
  for (const mp of open) mp.close();
  rmSync(WORK, { recursive: true, force: true });
});

const until = async (pred, what, ms = 60000) => {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

function lmErr(a, b) {
  const n = b.length / 3;
  let sum = 0, max = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.hypot(a[3 * i] - b[3 * i], a[3 * i + 1] - b[3 * i + 1]);
    sum += d; max = Math.max(max, d);
  }
  return { mean: sum / n, max };
}

/** The browser pipeline on the standard host: wasmrt.init + wasmrt.vision, same variant, same frame sequence
 * (refine: the attention mesh; int8: the int8 face models). */
async function reference(variant, frames, { refine = false, int8 = false } = {}) {
  const rt = await init({ variant });
  const mesh = await FaceMesh.create(rt, int8
    ? { detectorModel: join(M.models, "face_detector_int8.wrt"), landmarkModel: join(M.models, "face_landmark_int8.wrt") }
    : { modelBase: M.models + "/", refine });
  const out = [];
  for (const f of frames) out.push(await mesh.detect(f));
  await mesh.release();
  return out;
}

async function session(name, platform, { brotli = false, int8 = false, device = {} } = {}) {
  const apps = build({ brotli, int8, only: [platform], target: join(WORK, name) });
  const mp = new MiniProgram({ platform, root: apps[platform], device });
  open.push(mp);
  const page = await mp.open("pages/tryon/tryon");
  await until(() => page.data.status !== "loading models…" && (page.ctx || page.data.status.startsWith("error")), `${name}: page ready`);
  assert.equal(page.data.status, "ready", `${name}: ${page.data.status}`);
  const run = async (frame) => {
    const before = page.results;
    mp.cameraFrame(frame.data, frame.width, frame.height);
    await until(() => page.results > before || page.data.status.startsWith("error"), `${name}: a result`);
    assert.ok(!page.data.status.startsWith("error"), page.data.status);
    return page.lastResult;
  };
  return { mp, page, run, root: apps[platform] };
}

test("the projects' code only uses what a mini-program has", () => {
  const apps = build({ only: ["wechat", "alipay"], target: join(WORK, "scan") });
  for (const [platform, root] of Object.entries(apps)) {
    const worker = moduleGraph(join(root, "workers/facemesh/index.js"));
    const page = moduleGraph(join(root, "pages/tryon/tryon.js"));
    for (const { file, src, deps } of [...worker, ...page]) {
      const where = `${platform}: ${relative(root, file)}`;
      // JSDoc types (`@type {import("./x.js").T}`) are comments, not code: block comments and whole-line comments go
      const code = src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
      assert.ok(!/import\.meta|\bimport\s*\(|require\s*\(/.test(code), `${where}: import.meta, dynamic import or require`);
      for (const d of deps) assert.ok(d.startsWith("./") || d.startsWith("../"), `${where}: bare import ${d}`);
    }
    for (const { file } of worker) {
      assert.ok(!relative(join(root, "workers"), file).startsWith(".."), `${platform}: the worker loads ${file} outside workers/`);
    }
    report("worker-graph", { platform, files: worker.length });
  }
});

test("the host adapter refuses bytes and URLs and has no validate", async () => {
  const seen = [];
  const wasm = { instantiate: async (src) => { seen.push(src); throw new Error("no such file"); } };
  const host = miniProgramHost({ platform: "wechat", wasm, fs: null });
  assert.equal(host.validate, undefined);
  await assert.rejects(host.instantiate(new Uint8Array(8), {}), /code package path.*not bytes/);
  await assert.rejects(host.instantiate("https://example.com/x.wasm", {}), /only paths inside the code package/);
  assert.deepEqual(seen, []);
  await assert.rejects(host.instantiate("/wasm/x.wasm", {}), /no such file/);
});

test("emulated host rules: subpackages, one worker, WXWebAssembly without validate", async () => {
  const apps = build({ only: ["wechat"], target: join(WORK, "rules") });
  const root = apps.wechat;
  mkdirSync(join(root, "workers/probe"), { recursive: true });
  writeFileSync(join(root, "workers/probe/index.js"), `
    const w = WXWebAssembly, out = { validate: typeof w.validate, compile: typeof w.compile, webassembly: typeof WebAssembly };
    const attempt = (src) => w.instantiate(src, { env: {} }).then((i) => "ok " + typeof (i.exports ?? i.instance?.exports), (e) => "rejected: " + e.message);
    Promise.all([attempt(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])), attempt("https://x.invalid/a.wasm"), attempt("/wasm/wasmrt-scalar.wasm"),
      attempt("/wasm/missing.wasm")]).then((r) => worker.postMessage({ ...out, results: r }));`);
  const mp = new MiniProgram({ platform: "wechat", root });
  open.push(mp);
  const fs = mp.api.getFileSystemManager();
  assert.ok(fs.readFileSync("/models/face_detector.wrt") instanceof ArrayBuffer);
  assert.equal(typeof fs.readFileSync("app.json", "utf8"), "string");
  assert.throws(() => fs.readFileSync("/landmarks/data/face_landmark.wrt.0"), /no such file/); // not loaded yet
  await new Promise((resolve, reject) => mp.api.loadSubpackage({ name: "landmarks", success: resolve, fail: reject }));
  assert.ok(fs.readFileSync("/landmarks/data/face_landmark.wrt.0").byteLength > 0);
  const w = mp.api.createWorker("workers/probe/index.js");
  assert.throws(() => mp.api.createWorker("workers/probe/index.js"), /max concurrent workers/);
  const msg = await new Promise((resolve) => w.onMessage(resolve));
  w.terminate();
  mp.worker = null;
  assert.equal(msg.validate, "undefined");
  assert.equal(msg.compile, "undefined");
  assert.equal(msg.webassembly, "undefined");
  assert.match(msg.results[0], /rejected: .*path/);
  assert.match(msg.results[1], /rejected: .*only code package paths/);
  assert.equal(msg.results[2], "ok object");
  assert.match(msg.results[3], /rejected: .*no such file/);
});

const frames = [ASTRO, ...Array.from({ length: M.clip.frames }, (_, t) => clipFrame(ASTRO, t, M.clip.frames, M.clip.size))];
let simdRef = null;

test("WeChat (SIMD device): astronaut and the clip equal the browser pipeline", async () => {
  simdRef ??= await reference("simd", frames);
  const { page, run, mp } = await session("wechat-simd", "wechat");
  assert.match(page.data.variant, /^simd/);
  let ran = 0, tracked = 0;
  for (let k = 0; k < frames.length; k++) {
    const got = await run(frames[k]);
    const want = simdRef[k];
    assert.equal(got.faces.length, want.faces.length, `frame ${k}`);
    assert.deepEqual(got.faces[0].landmarks, Array.from(want.faces[0].landmarks), `frame ${k}: landmarks differ`);
    assert.equal(got.ranDetector, want.ranDetector, `frame ${k}`);
    if (k > 0) { ran += got.ranDetector; tracked++; }
    if (k === 0) {
      const painted = { data: new Uint8ClampedArray(ASTRO.data), width: ASTRO.width, height: ASTRO.height };
      recolorLips(painted, want.faces[0], { color: "#c2185b", intensity: 0.6 });
      const canvas = mp.canvases.out;
      assert.equal(canvas.width, ASTRO.width);
      assert.deepEqual(canvas.pixels, painted.data, "the canvas shows the browser pipeline's recoloured frame");
      const e = lmErr(got.faces[0].landmarks, M.astronaut.landmarks);
      assert.ok(e.mean < 0.5, `vs python_ref: ${e.mean} px`);
      report("miniprogram-astronaut", { platform: "wechat", variant: "simd", meanPxVsPython: e.mean, ms: got.ms });
    }
  }
  assert.ok(ran / tracked < 0.2, `detector on ${ran}/${tracked} clip frames`);
  report("miniprogram-clip", { platform: "wechat", detectorFraction: ran / tracked, stats: page.data.stages, fps: page.data.fps });
  page.onUnload();
});

test("WeChat built with --int8: the int8 face models give the browser pipeline's int8 results, near the float ones",
  { skip: process.env.VISION_INT8 ? false : "VISION_INT8 is not set (the int8 face models: python -m wasmrt.zoo.face_int8)" },
  async () => {
    simdRef ??= await reference("simd", frames);
    const int8Ref = await reference("simd", frames, { int8: true });
    const { page, run } = await session("wechat-int8", "wechat", { int8: true });
    assert.match(page.data.variant, /^simd/);
    const errs = [];
    for (let k = 0; k < frames.length; k++) {
      const got = await run(frames[k]);
      assert.equal(got.faces.length, 1, `frame ${k}`);
      assert.deepEqual(got.faces[0].landmarks, Array.from(int8Ref[k].faces[0].landmarks), `frame ${k}: landmarks differ`);
      errs.push(lmErr(got.faces[0].landmarks, simdRef[k].faces[0].landmarks).mean);
    }
    // in image pixels through the whole pipeline (detector, ROI, tracking), against the float models' pipeline
    const mean = errs.reduce((a, b) => a + b, 0) / errs.length;
    report("miniprogram-int8", { platform: "wechat", frames: errs.length, meanPxVsFloat: mean, maxFramePx: Math.max(...errs) });
    assert.ok(mean < 2, `int8 vs float pipeline: ${mean} px`);
    page.onUnload();
  });

test("WeChat live camera loop: samples of the canvas a person sees", async () => {
  // The clip arrives as camera frames at 30 fps (frames that come while one is in flight are dropped, as the page
  // does); the canvas is sampled every 40 ms. tests/test_miniprogram.py looks for the lipstick in each sample.
  const { page, mp } = await session("wechat-live", "wechat");
  page.setData({ color: M.livePaint.color, intensity: Math.round(100 * M.livePaint.intensity) });
  const clip = frames.slice(1);
  let t = 0;
  const camera = setInterval(() => { const f = clip[t++ % clip.length]; mp.cameraFrame(f.data, f.width, f.height); }, 33);
  const out = join(DIR, "mp-live");
  mkdirSync(out, { recursive: true });
  const samples = [];
  try {
    await until(() => page.results > 0, "the first painted frame");
    for (let k = 0; k < 40; k++) {
      await new Promise((r) => setTimeout(r, 40));
      const c = mp.canvases.out, file = `sample-${k}.rgba`;
      writeFileSync(join(out, file), c.pixels);
      samples.push({ file, width: c.width, height: c.height });
    }
  } finally {
    clearInterval(camera);
  }
  writeFileSync(join(out, "samples.json"), JSON.stringify(samples));
  report("miniprogram-live", { platform: "wechat", samples: samples.length, results: page.results, fps: page.data.fps });
  page.onUnload();
});

test("WeChat refine switch: the attention mesh's 478 points equal the browser pipeline's, and back", async () => {
  const [want] = await reference("simd", [ASTRO], { refine: true });
  simdRef ??= await reference("simd", frames);
  const { page, run, mp } = await session("wechat-refine", "wechat");
  assert.equal(page.data.points, 468);
  assert.ok(!mp.loaded.has("attention") && !mp.loaded.has("attention2"), "the attention mesh loads on first use");
  page.setData({ color: M.livePaint.color, intensity: Math.round(100 * M.livePaint.intensity) });
  await page.onRefineChange({ detail: { value: true } });
  assert.equal(page.data.status, "ready");
  assert.equal(page.data.refine, true);
  assert.equal(page.data.points, 478);
  assert.ok(mp.loaded.has("attention") && mp.loaded.has("attention2"));
  const got = await run(ASTRO);
  assert.equal(got.faces.length, 1);
  assert.equal(got.faces[0].landmarks.length, 478 * 3);
  assert.deepEqual(got.faces[0].landmarks, Array.from(want.faces[0].landmarks), "refined landmarks differ");
  const e = lmErr(got.faces[0].landmarks, M.astronaut.refined.landmarks);
  assert.ok(e.mean < 0.5, `refined vs python_ref: ${e.mean} px`);
  const painted = { data: new Uint8ClampedArray(ASTRO.data), width: ASTRO.width, height: ASTRO.height };
  recolorLips(painted, want.faces[0], { color: M.livePaint.color, intensity: M.livePaint.intensity });
  const canvas = mp.canvases.out;
  assert.deepEqual(canvas.pixels, painted.data, "the canvas shows the refined lips' recoloured frame");
  writeFileSync(join(DIR, "mp-refined.rgba"), canvas.pixels); // what a person sees: tests/test_miniprogram.py
  report("miniprogram-refine", { platform: "wechat", variant: "simd", meanPxVsPython: e.mean, maxPxVsPython: e.max,
    width: canvas.width, height: canvas.height, ms: got.ms });
  await page.onRefineChange({ detail: { value: false } });
  assert.equal(page.data.points, 468);
  const back = await run(ASTRO);
  assert.deepEqual(back.faces[0].landmarks, Array.from(simdRef[0].faces[0].landmarks), "back to the face mesh");
  page.onUnload();
});

test("Alipay refine switch: the attention mesh from the preloaded subpackages", async () => {
  const [want] = await reference("simd", [ASTRO], { refine: true });
  const { page, run } = await session("alipay-refine", "alipay");
  await page.onRefineChange({ detail: { value: true } });
  assert.equal(page.data.status, "ready");
  const got = await run(ASTRO);
  assert.deepEqual(got.faces[0].landmarks, Array.from(want.faces[0].landmarks));
  page.onUnload();
});

test("WeChat refine switch with a damaged attention model: a clear error, and the face mesh keeps running", async () => {
  simdRef ??= await reference("simd", frames);
  const { page, mp, root } = await session("wechat-refine-broken", "wechat");
  const part = join(root, "attention2/data/face_landmark_attention.wrt.1");
  writeFileSync(part, Buffer.alloc(readFileSync(part).length, 0x41)); // same size, garbage
  await page.onRefineChange({ detail: { value: true } });
  assert.match(page.data.status, /^error: .*face_landmark_attention/);
  assert.equal(page.data.refine, false);
  const before = page.results;
  mp.cameraFrame(ASTRO.data, ASTRO.width, ASTRO.height);
  await until(() => page.results > before, "a frame after the failed switch");
  assert.deepEqual(page.lastResult.faces[0].landmarks, Array.from(simdRef[0].faces[0].landmarks));
  report("miniprogram-refine-broken", { status: page.data.status });
  page.onUnload();
});

test("WeChat (no SIMD, brotli .wasm.br, instantiate resolving {instance}): falls back to scalar", async () => {
  const scalarRef = await reference("scalar", [ASTRO]);
  const { page, run } = await session("wechat-scalar", "wechat", { brotli: true, device: { simd: false, instantiateResult: "object" } });
  assert.match(page.data.variant, /^scalar/);
  assert.match(page.data.variant, /no simd: .*v128/);
  const got = await run(ASTRO);
  assert.deepEqual(got.faces[0].landmarks, Array.from(scalarRef[0].faces[0].landmarks));
  report("miniprogram-fallback", { platform: "wechat", variant: "scalar", reason: page.data.variant });
  page.onUnload();
});

test("Alipay: path instantiate, and the bytes fallback of builds that only take bytes", async () => {
  simdRef ??= await reference("simd", frames);
  for (const instantiate of ["path", "bytes"]) {
    const { page, run } = await session(`alipay-${instantiate}`, "alipay", { device: { instantiate } });
    assert.match(page.data.variant, /^simd/);
    const got = await run(ASTRO);
    assert.deepEqual(got.faces[0].landmarks, Array.from(simdRef[0].faces[0].landmarks));
    report("miniprogram-alipay", { instantiate, variant: page.data.variant });
    page.onUnload();
  }
});
