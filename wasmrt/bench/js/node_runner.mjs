// Node host of `wasmrt bench`: node node_runner.mjs JOB.json RESULT.json
// Runs from the peers folder's bench-<hash>/ (copied there by the Python side) so that the peers resolve from its node_modules.
// Progress goes to stderr as "@progress {json}" lines, which the Python side turns into its progress bar.

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import vm from "node:vm";

import { runJob } from "./engines.mjs";
import { waitMs } from "./procstat.mjs";

const [jobPath, resultPath] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const base = path.dirname(path.resolve(jobPath));
const readBytes = async (p) => new Uint8Array(fs.readFileSync(path.resolve(base, p)));
const kinds = new Set(job.engines.map((e) => e.kind));
const libs = {};

if (kinds.has("ort")) libs.ort = await import("onnxruntime-web");
if (kinds.has("tfjs")) {
  libs.tf = await import("@tensorflow/tfjs-core");
  libs.tfconv = await import("@tensorflow/tfjs-converter");
  const wasm = await import("@tensorflow/tfjs-backend-wasm");
  // One thread: the threaded build starts its workers from blob: URLs, which Node's Worker refuses.
  libs.tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
  (wasm.setThreadsCount ?? wasm.default?.setThreadsCount)?.(1);
  await libs.tf.setBackend("wasm");
  await libs.tf.ready();
}
if (kinds.has("litert")) {
  // LiteRT.js loads its emscripten glue with importScripts/<script>; in Node, evaluate it with the CommonJS
  // variables emscripten's Node branch expects.
  globalThis.self ??= globalThis;
  globalThis.importScripts = (file) => {
    const code = fs.readFileSync(file, "utf8");
    const wrapped = vm.runInThisContext(
      `(function (require, __dirname, __filename) {${code}\n;return ModuleFactory;})`, { filename: file });
    globalThis.ModuleFactory = wrapped(createRequire(file), path.dirname(file), file);
  };
  const req = createRequire(import.meta.url);
  const core = pathToFileURL(req.resolve("@litertjs/core")).href;
  const wasmDir = path.join(path.dirname(req.resolve("@litertjs/core/package.json")), "wasm");
  const modules = {};
  libs.litertModule = (variant) => {
    modules[variant] ??= (async () => {
      const lib = await import(`${core}?variant=${variant}`); // a separate module instance per build
      const file = variant === "relaxed" ? "litert_wasm_internal.js" : "litert_wasm_compat_internal.js";
      await lib.loadLiteRt(path.join(wasmDir, file));
      return lib;
    })();
    return modules[variant];
  };
}
if (kinds.has("wasmrt")) {
  libs.wasmrt = await import(pathToFileURL(job.wasmrt_module).href); // our JS binding, js_bindings/src/index.js
  libs.wasmrtOptions = { wasmPaths: job.wasmrt_wasm_dir };
}
if (job.baseline_module) { // bench --baseline: the earlier build's own binding and modules
  libs.baseline = { wasmrt: await import(pathToFileURL(job.baseline_module).href),
    wasmrtOptions: { wasmPaths: job.baseline_wasm_dir } };
}

const progress = (p) => process.stderr.write(`@progress ${JSON.stringify(p)}\n`);
// CPU time of this thread, in ms: /proc/thread-self/schedstat (nanoseconds run). The kernel brings that count up
// to date when the thread sleeps, so sleep 50 us first (getrusage, behind process.cpuUsage, is kept monotonic by
// rounding that can stall it for milliseconds). Without /proc the bench has the wall clock only.
const nap = new Int32Array(new SharedArrayBuffer(4));
function threadCpuMs() {
  Atomics.wait(nap, 0, 0, 0.05);
  return Number(fs.readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6;
}
if (fs.existsSync("/proc/thread-self/schedstat")) {
  libs.cpuMsSync = threadCpuMs;
  libs.cpuMs = threadCpuMs;
  libs.waitMs = waitMs;
}
const results = await runJob(job, libs, readBytes, progress);
const host = { kind: "node", version: process.version, v8: process.versions.v8 };
fs.writeFileSync(resultPath, JSON.stringify({ host, engines: results }));
