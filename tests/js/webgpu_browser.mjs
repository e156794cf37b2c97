// Drives Debian's Chromium (playwright-core) for tests/test_webgpu_browser.py: one browser with WebGPU on
// SwiftShader and one without WebGPU, each page served from 127.0.0.1 by the demo server.
//   node webgpu_browser.mjs jobs.json results.json
// jobs.json: {origin, chromium, models: [name], unsupported: base64 .wrt}. Inputs are made in the page from a formula
// the Python side repeats (x[i] = (i * 2654435761 mod 2^32) / 2^32 * 2 - 1), outputs come back as base64 float32.
import { readFileSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const [jobsFile, resultsFile] = process.argv.slice(2);
const jobs = JSON.parse(readFileSync(jobsFile, "utf8"));
const WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-angle=vulkan", "--use-vulkan=swiftshader",
  "--use-webgpu-adapter=swiftshader"];

// In the page: run each model on the given backend; every value crosses back as JSON.
async function pageRun({ origin, backend, models, unsupported, chain, f16Model, fallback }) {
  const wasmrt = await import(`${origin}/js_bindings/src/index.js`);
  const b64 = (buf) => { let s = ""; const u = new Uint8Array(buf); for (let i = 0; i < u.length; i += 8192) s += String.fromCharCode(...u.subarray(i, i + 8192)); return btoa(s); };
  // model a's output kept on the GPU ({outputs: "gpu"}) and fed to model b; read back, and the errors.
  async function chainRun(rt, chain, b64) {
    const msg = async (f) => { try { await f(); return "no error"; } catch (e) { return `${e.name}: ${e.message}`; } };
    try {
      const load = (s, name) => rt.loadBytes(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)), { name });
      const a = await load(chain.a, "a.wrt");
      const b = await load(chain.b, "b.wrt");
      const n = a.inputs[0].shape.reduce((p, d) => p * d, 1);
      const x = new Float32Array(n);
      for (let i = 0; i < n; i++) x[i] = (Math.imul(i, 2654435761) >>> 0) / 4294967296 * 2 - 1;
      const cpuA = Object.values(await a.run(x))[0];
      const ta = Object.values(await a.run(x, { outputs: "gpu" }))[0];
      const readA = await ta.read();
      const outB = Object.values(await b.run({ [b.inputs[0].name]: ta }))[0];
      const tb = Object.values(await b.run(ta, { outputs: "gpu" }))[0];
      const readB = await tb.read();
      const res = { kind: ta.constructor.name, shapeA: ta.shape, cpuA: b64(cpuA.data.buffer), readA: b64(readA.data.buffer),
        outB: b64(outB.data.buffer), readB: b64(readB.data.buffer),
        wrongShape: await msg(() => a.run(tb)), badOption: await msg(() => a.run(x, { outputs: "disk" })) };
      ta.destroy();
      res.destroyed = await msg(() => b.run(ta));
      tb.destroy();
      a.release();
      b.release();
      return res;
    } catch (e) {
      return { error: `${e.name}: ${e.message}` };
    }
  }
  const out = { init: null, models: {} };
  let rt;
  try {
    rt = await wasmrt.init({ backend });
    out.init = { backend: rt.backend, reason: rt.reason };
  } catch (e) {
    out.init = { error: `${e.name}: ${e.message}` };
    return out;
  }
  for (const name of models) {
    try {
      const m = await rt.load(`${origin}/models/${name}.wrt`);
      const feeds = {};
      for (const s of m.inputs) {
        const n = s.shape.reduce((a, d) => a * d, 1);
        const x = new Float32Array(n);
        for (let i = 0; i < n; i++) x[i] = (Math.imul(i, 2654435761) >>> 0) / 4294967296 * 2 - 1;
        feeds[s.name] = x;
      }
      const t0 = performance.now();
      const res = await m.run(feeds);
      const first = performance.now() - t0;
      let second = null; // a second run (warm pipelines) where it is cheap: SwiftShader takes a minute on ppocr_det
      if (first < 3000) { const t1 = performance.now(); await m.run(feeds); second = performance.now() - t1; }
      out.models[name] = { firstMs: first, secondMs: second, backend: m.backend ?? "wasm", choice: m.choice ?? null,
        outputs: Object.fromEntries(Object.entries(res).map(([k, t]) => [k, { shape: t.shape, b64: b64(t.data.buffer) }])) };
      m.release();
    } catch (e) {
      out.models[name] = { error: `${e.name}: ${e.message}` };
    }
  }
  if (rt.backend === "auto" && models.length) { // loaded again: the choice is remembered, no trial
    const again = await rt.load(`${origin}/models/${models[0]}.wrt`);
    out.again = again.choice;
    again.release();
  }
  if (chain) out.chain = await chainRun(rt, chain, b64);
  if (f16Model) { // f16 storage: runs where the adapter has shader-f16, else an error naming the feature
    out.f16 = { adapterHasF16: rt.device.features.has("shader-f16") };
    try {
      const m = await rt.load(`${origin}/models/${f16Model}.wrt`, { storage: "f16" });
      const feeds = {};
      for (const s of m.inputs) {
        const n = s.shape.reduce((a, d) => a * d, 1);
        feeds[s.name] = new Float32Array(n).map((_, i) => (Math.imul(i, 2654435761) >>> 0) / 4294967296 * 2 - 1);
      }
      const res = await m.run(feeds);
      out.f16.storage = m.storage;
      out.f16.outputs = Object.fromEntries(Object.entries(res).map(([k, t]) => [k, { shape: t.shape, b64: b64(t.data.buffer) }]));
      m.release();
    } catch (e) {
      out.f16.error = `${e.name}: ${e.message}`;
    }
  }
  if (fallback) { // load(..., {fallback: "wasm"}): the ops without a WGSL kernel on wasm, the boundaries reported
    out.fallback = {};
    const inputsOf = (m) => Object.fromEntries(m.inputs.map((s) => [s.name,
      new Float32Array(s.shape.reduce((a, d) => a * d, 1)).map((_, i) => (Math.imul(i, 2654435761) >>> 0) / 4294967296 * 2 - 1)]));
    const asJson = (res) => Object.fromEntries(Object.entries(res).map(([k, t]) => [k, { shape: t.shape, b64: b64(t.data.buffer) }]));
    for (const [name, src] of Object.entries(fallback)) {
      try {
        const m = src.startsWith("/") ? await rt.load(`${origin}${src}`, { fallback: "wasm" })
          : await rt.loadBytes(Uint8Array.from(atob(src), (c) => c.charCodeAt(0)), { name, fallback: "wasm" });
        const res = await m.run(inputsOf(m));
        const r = { report: m.fallback, outputs: asJson(res) };
        if (!src.startsWith("/")) { // outputs kept on the GPU (one computed on wasm, uploaded), and a second run
          const onGpu = await m.run(inputsOf(m), { outputs: "gpu" });
          r.gpuOutputs = asJson(Object.fromEntries(await Promise.all(Object.entries(onGpu).map(async ([k, t]) => [k, await t.read()]))));
          r.second = asJson(await m.run(inputsOf(m)));
          try { await rt.loadBytes(Uint8Array.from(atob(src), (c) => c.charCodeAt(0)), { fallback: "cpu" }); } catch (e) { r.badOption = `${e.name}: ${e.message}`; }
        }
        m.release();
        out.fallback[name] = r;
      } catch (e) {
        out.fallback[name] = { error: `${e.name}: ${e.message}` };
      }
    }
  }
  if (unsupported) {
    try {
      const bytes = Uint8Array.from(atob(unsupported), (c) => c.charCodeAt(0));
      await (rt.loadBytes(bytes, { name: "matmul.wrt" }));
      out.unsupported = "loaded";
    } catch (e) {
      out.unsupported = `${e.name}: ${e.message}`;
    }
  }
  return out;
}

// In the page: the same through a module Worker (navigator.gpu in a dedicated worker).
async function workerRun({ origin, model }) {
  const src = `
    import * as wasmrt from "${origin}/js_bindings/src/index.js";
    self.onmessage = async () => {
      try {
        const rt = await wasmrt.init({ backend: "webgpu" });
        const m = await rt.load("${origin}/models/${model}.wrt");
        const feeds = {};
        for (const s of m.inputs) {
          const n = s.shape.reduce((a, d) => a * d, 1);
          const x = new Float32Array(n);
          for (let i = 0; i < n; i++) x[i] = (Math.imul(i, 2654435761) >>> 0) / 4294967296 * 2 - 1;
          feeds[s.name] = x;
        }
        const res = await m.run(feeds);
        const sums = Object.fromEntries(Object.entries(res).map(([k, t]) => [k, Array.from(t.data.subarray(0, 16))]));
        self.postMessage({ backend: rt.backend, head: sums });
      } catch (e) { self.postMessage({ error: e.name + ": " + e.message }); }
    };`;
  const w = new Worker(URL.createObjectURL(new Blob([src], { type: "text/javascript" })), { type: "module" });
  return new Promise((resolve) => { w.onmessage = (e) => { resolve(e.data); w.terminate(); }; w.postMessage(0); });
}

const results = {};
for (const [label, flags] of [["webgpu", WEBGPU_FLAGS], ["nogpu", []]]) {
  const browser = await chromium.launch({ executablePath: jobs.chromium, args: ["--no-sandbox", ...flags] });
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") console.error(`[${label}] ${m.text()}`); });
  await page.goto(`${jobs.origin}/js_bindings/package.json`);
  results[label] = {};
  if (label === "webgpu") {
    results[label].webgpu = await page.evaluate(pageRun, { origin: jobs.origin, backend: "webgpu", models: jobs.models,
      unsupported: jobs.unsupported, chain: jobs.chain, f16Model: jobs.workerModel, fallback: jobs.fallback });
    results[label].auto = await page.evaluate(pageRun, { origin: jobs.origin, backend: "auto", models: [jobs.workerModel] });
    results[label].worker = await page.evaluate(workerRun, { origin: jobs.origin, model: jobs.workerModel });
  } else {
    results[label].auto = await page.evaluate(pageRun, { origin: jobs.origin, backend: "auto", models: [jobs.workerModel] });
    results[label].webgpu = await page.evaluate(pageRun, { origin: jobs.origin, backend: "webgpu", models: [] });
  }
  results[label].version = browser.version();
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
