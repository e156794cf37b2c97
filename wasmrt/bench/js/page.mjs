// Browser side of the Chromium host: loads the peers the job needs from /peers/, our binding from /wasmrt/, the
// model files from /job/, and runs the same runJob as the Node host.
import { runJob } from "./engines.mjs";
import { NM, script } from "./peer_script.mjs";

async function loadLibs(job, kinds, peerThreads) {
  const libs = {};
  if (kinds.has("ort")) libs.ort = await import(`${NM}/onnxruntime-web/dist/ort.wasm.min.mjs`);
  if (kinds.has("tfjs")) {
    for (const f of ["tfjs-core/dist/tf-core.min.js", "tfjs-converter/dist/tf-converter.min.js",
      "tfjs-backend-wasm/dist/tf-backend-wasm.min.js"]) await script(`${NM}/@tensorflow/${f}`);
    const tf = globalThis.tf;
    tf.wasm.setWasmPaths(`${NM}/@tensorflow/tfjs-backend-wasm/dist/`);
    // one thread unless the job asks for more (the threaded build needs this cross-origin isolated page)
    tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", peerThreads > 1 && self.crossOriginIsolated);
    if (peerThreads > 1) tf.wasm.setThreadsCount(peerThreads);
    await tf.setBackend("wasm");
    await tf.ready();
    libs.tf = tf;
    libs.tfconv = tf;
    libs.tfThreads = peerThreads > 1 ? tf.wasm.getThreadsCount?.() ?? peerThreads : 1;
  }
  if (kinds.has("litert")) {
    const modules = {};
    libs.litertModule = (variant) => {
      modules[variant] ??= (async () => {
        const lib = await import(`${NM}/@litertjs/core/dist/index.js?variant=${variant}`);
        const file = variant === "relaxed" ? "litert_wasm_internal.js" : "litert_wasm_compat_internal.js";
        await lib.loadLiteRt(`${NM}/@litertjs/core/wasm/${file}`);
        return lib;
      })();
      return modules[variant];
    };
  }
  if (kinds.has("wasmrt")) {
    libs.wasmrt = await import("/wasmrt/src/index.js");
    libs.wasmrtOptions = { wasmPaths: "/wasmrt/dist/" };
  }
  if (job.baseline_module) { // bench --baseline: the earlier build's own binding and modules (chromium_driver.mjs)
    libs.baseline = { wasmrt: await import("/baseline/src/index.js"), wasmrtOptions: { wasmPaths: "/baseline/dist/" } };
  }
  return libs;
}

async function readBytes(path) {
  const res = await fetch(`/job/${path}`);
  if (!res.ok) throw new Error(`cannot fetch /job/${path}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

globalThis.runBench = async (job) => {
  const libs = await loadLibs(job, new Set(job.engines.map((e) => e.kind)), job.peer_threads ?? 1);
  // the driver's count of how long this renderer's threads waited for a core (/proc), when it found the renderer.
  // No CPU clock: reading one through the driver idles this thread just before the timed run (bench README).
  const waitMs = globalThis.wasmrtWaitMs;
  if (typeof waitMs === "function" && (await waitMs()) >= 0) Object.assign(libs, { waitMs, waitsOf: "warmup" });
  // Progress goes to the driver as a call the page awaits, not as a console message, and at most every 250 ms: the
  // browser and the driver handle a console message while the next run is timed, on the cores that a run on
  // several threads needs.
  const report = globalThis.wasmrtProgress;
  let last = -Infinity;
  const progress = (p) => {
    if (p.stage === "round" && p.done < p.total && performance.now() - last < 250) return null;
    last = performance.now();
    return report(JSON.stringify(p));
  };
  const host = { kind: "chromium", userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated };
  if (job.vision) { // wasmrt bench --vision: the solutions' pipelines, not one model (vision.mjs)
    const { runVision } = await import("./vision.mjs");
    return { host, engines: { vision: await runVision(job, libs, readBytes, progress) } };
  }
  if (job.train) { // wasmrt bench --train: training from scratch, ours against TF.js (train.mjs)
    const { runTrain } = await import("./train.mjs");
    return { host, engines: { train: await runTrain(job, libs, readBytes, progress) } };
  }
  const engines = await runJob(job, libs, readBytes, progress);
  return { host, engines };
};
document.getElementById("status").textContent = "ready";
