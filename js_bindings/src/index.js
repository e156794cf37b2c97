// wasmrt: on-device neural-network inference in WebAssembly.
//   const rt = await wasmrt.init();                       // picks relaxed > simd > scalar
//   const model = await rt.load("model.wrt");
//   const out = await model.run({ input: { data, shape } });

import { WasmrtError } from "./errors.js";
import { defaultHost } from "./host.js";
import { Runtime } from "./runtime.js";
import { autoThreads, sharedMemory, startThreads, threadsUnavailable } from "./threads.js";
import { chooseVariant, probe, VARIANTS } from "./variants.js";

export {
  ERROR_CODES, InputError, ModelFormatError, OutOfMemoryError, ResourceLimitError, UnsupportedOpError, WasmrtError,
} from "./errors.js";
export { defaultHost, nodeHost, webHost } from "./host.js";
export { readMetadata } from "./format/reader.js";
export { Model, Runtime, Stream } from "./runtime.js";
export { DTYPES, Tensor } from "./tensor.js";
export { describeVariant, probe, VARIANTS } from "./variants.js";
export * as image from "./image.js";
// The face pipeline and the try-on are their own entry point: import { FaceMesh } from "wasmrt/vision".

// Literal URLs, so bundlers see and copy the .wasm files.
const DEFAULT_WASM = {
  relaxed: () => new URL("../dist/wasmrt-relaxed.wasm", import.meta.url),
  simd: () => new URL("../dist/wasmrt-simd.wasm", import.meta.url),
  scalar: () => new URL("../dist/wasmrt-scalar.wasm", import.meta.url),
  "relaxed-mt": () => new URL("../dist/wasmrt-relaxed-mt.wasm", import.meta.url),
  "simd-mt": () => new URL("../dist/wasmrt-simd-mt.wasm", import.meta.url),
};

// The engine is freestanding: it imports nothing today. Kept in one place for hosts that need an object anyway.
const ENGINE_IMPORTS = () => ({ env: {} });

function wasmSource(variant, wasmPaths) {
  if (wasmPaths === undefined || wasmPaths === null) return DEFAULT_WASM[variant]();
  if (typeof wasmPaths === "string" || wasmPaths instanceof URL) { // a folder (URL or path) holding all three
    const dir = String(wasmPaths);
    return dir.replace(/\/?$/, "/") + `wasmrt-${variant}.wasm`;
  }
  if (typeof wasmPaths === "object") { // per variant: URL, path or bytes
    if (wasmPaths[variant] === undefined) {
      throw new WasmrtError(`init({wasmPaths}) has no entry for the ${variant} variant`);
    }
    return wasmPaths[variant];
  }
  throw new WasmrtError("init({wasmPaths}) takes a folder URL/path or {relaxed, simd, scalar}");
}

function threadCount(threads) {
  if (threads === undefined || threads === null) return 1;
  if (threads === "auto") return autoThreads();
  if (!Number.isInteger(threads) || threads < 1) {
    throw new WasmrtError(`init({threads}) takes a positive integer or "auto", got ${JSON.stringify(threads)}`);
  }
  return threads;
}

/**
 * Instantiate the engine.
 * options.variant: "auto" (default) | "relaxed" | "simd" | "scalar"
 * options.threads: 1 (default), a number, or "auto" (the cores the host reports, at most 8); fewer where threads
 *   cannot run (rt.threads says how many, rt.reason why)
 * options.wasmPaths: folder of the wasmrt-*.wasm files, or {variant: URL | path | bytes}
 * options.host: a host adapter (see host.js) for platforms without fetch/WebAssembly (mini-programs)
 * options.backend: "wasm" (default) | "webgpu" (the WGSL kernels on navigator.gpu; an error says why when WebGPU
 *   is absent or broken) | "auto" (WebGPU when present and working, else wasm). rt.backend and rt.reason say which
 *   and why.
 */
export async function init(options = {}) {
  const backend = options.backend ?? "wasm";
  if (!["wasm", "webgpu", "auto"].includes(backend)) {
    throw new WasmrtError(`init({backend}) takes "wasm", "webgpu" or "auto", not ${JSON.stringify(backend)}`);
  }
  let gpuWhyNot = "";
  if (backend !== "wasm") {
    try { // the WebGPU code is its own module: the wasm path never loads it
      const { openDevice } = await import("./webgpu/backend.js");
      const rt = await openDevice();
      rt.reason = `WebGPU adapter ${rt.adapter}${backend === "auto" ? " (auto: WebGPU present and working)" : ""}`;
      rt.host = options.host ?? defaultHost();
      let wasmRt = null; // the wasm engine of load(..., {fallback: "wasm"}), started on first use
      rt.wasmRuntime = () => (wasmRt ??= initWasm({ ...options, threads: 1 }));
      return rt;
    } catch (e) {
      if (backend === "webgpu") throw new WasmrtError(`init({backend: "webgpu"}): ${e.message}`, { cause: e });
      gpuWhyNot = e.message;
    }
  }
  const rt = await initWasm(options);
  rt.backend = "wasm";
  if (gpuWhyNot) rt.reason = `${rt.reason}; WebGPU not used: ${gpuWhyNot}`;
  return rt;
}

async function initWasm(options) {
  const host = options.host ?? defaultHost();
  const features = probe(host);
  const { variant, reason } = chooseVariant(features, options.variant);
  const asked = threadCount(options.threads);
  const noThreads = asked > 1 ? threadsUnavailable(host, variant) : null;
  if (asked > 1 && !noThreads) return initThreaded(host, variant, reason, features, asked, options.wasmPaths);
  const threadsReason = asked > 1 ? `1 thread of ${asked}: ${noThreads}` : "1 thread (as asked)";
  const source = wasmSource(variant, options.wasmPaths);
  let instance;
  try {
    instance = await host.instantiate(source, ENGINE_IMPORTS());
  } catch (e) {
    if (e instanceof WasmrtError) {
      throw new WasmrtError(`cannot load the ${variant} engine: ${e.message}`, { cause: e });
    }
    const from = typeof source === "string" || source instanceof URL ? ` from ${source}` : "";
    throw new WasmrtError(`cannot instantiate the ${variant} engine${from}: ${e.message}`, { cause: e });
  }
  // Some mini-program hosts resolve to {instance} instead of an Instance
  if (!instance?.exports && instance?.instance) instance = instance.instance;
  return new Runtime(instance, { variant, reason, features, host, threads: 1, threadsReason });
}

// The threaded build: one module on a shared memory, instantiated here and in asked - 1 Workers.
async function initThreaded(host, variant, reason, features, asked, wasmPaths) {
  const file = `${variant}-mt`;
  const source = wasmSource(file, wasmPaths);
  let module;
  try {
    const bytes = source instanceof Uint8Array || ArrayBuffer.isView(source) ? source : await host.readBytes(source);
    module = await WebAssembly.compile(bytes);
  } catch (e) {
    throw new WasmrtError(`cannot load the ${file} engine from ${source}: ${e.message}`, { cause: e });
  }
  const memory = sharedMemory();
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  let workers = [], why = "";
  try {
    workers = await startThreads(module, memory, instance.exports, asked);
  } catch (e) {
    why = `: a Worker failed to start (${e.message})`;
  }
  const threads = 1 + workers.length;
  const threadsReason = threads === asked ? `${threads} threads (as asked)` : `${threads} threads of ${asked}${why}`;
  return new Runtime(instance, { variant, reason, features, host, threads, threadsReason, workers });
}

export const version = "0.1.0";
