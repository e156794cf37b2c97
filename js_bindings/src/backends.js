// @ts-check
// The backends init() chooses among, each implementing the contract of backend.d.ts (tsc checks them against it):
//   wasm    the C engine compiled to WebAssembly (runtime.js): relaxed SIMD > SIMD128 > scalar, threads on request
//   webgpu  the generated WGSL kernels on navigator.gpu (webgpu/backend.js, imported only when asked for, so the
//           wasm path never downloads it)
// init({backend: "auto"}) keeps both where WebGPU works and measures, per model, which is faster (auto.js).

import { WasmrtError } from "./errors.js";
import { defaultHost } from "./host.js";
import { Runtime } from "./runtime.js";
import { autoThreads, sharedMemory, startThreads, threadsUnavailable } from "./threads.js";
import { chooseVariant, probe } from "./variants.js";

/** @typedef {import("./backend.js").Backend} Backend */
/** @typedef {import("./backend.js").Choice} Choice */
/** @typedef {import("./backend.js").InitOptions & { threads?: number | "auto" }} Options */

// Literal URLs, so bundlers see and copy the .wasm files.
/** @type {Record<string, () => URL>} */
const DEFAULT_WASM = {
  relaxed: () => new URL("../dist/wasmrt-relaxed.wasm", import.meta.url),
  simd: () => new URL("../dist/wasmrt-simd.wasm", import.meta.url),
  scalar: () => new URL("../dist/wasmrt-scalar.wasm", import.meta.url),
  "relaxed-mt": () => new URL("../dist/wasmrt-relaxed-mt.wasm", import.meta.url),
  "simd-mt": () => new URL("../dist/wasmrt-simd-mt.wasm", import.meta.url),
};

// The engine is freestanding: it imports nothing today. Kept in one place for hosts that need an object anyway.
const ENGINE_IMPORTS = () => ({ env: {} });

/** @param {string} variant @param {Options["wasmPaths"]} wasmPaths @param {Options["modules"]} [modules]
 * @returns {any} */
function wasmSource(variant, wasmPaths, modules) {
  if (wasmPaths === undefined || wasmPaths === null) {
    if (modules) throw new WasmrtError("init({modules}) describes modules built for given models: name their folder in wasmPaths");
    return DEFAULT_WASM[variant]();
  }
  if (typeof wasmPaths === "string" || wasmPaths instanceof URL) { // a folder (URL or path) holding all three
    const dir = String(wasmPaths);
    return dir.replace(/\/?$/, "/") + (modules?.modules[variant]?.file ?? `wasmrt-${variant}.wasm`);
  }
  if (typeof wasmPaths === "object") { // per variant: URL, path or bytes
    /** @type {Record<string, unknown>} */
    const byVariant = wasmPaths;
    if (byVariant[variant] === undefined) {
      throw new WasmrtError(`init({wasmPaths}) has no entry for the ${variant} variant`);
    }
    return byVariant[variant];
  }
  throw new WasmrtError("init({wasmPaths}) takes a folder URL/path or {relaxed, simd, scalar}");
}

/** @param {unknown} threads @returns {number} */
function threadCount(threads) {
  if (threads === undefined || threads === null) return 1;
  if (threads === "auto") return autoThreads();
  if (typeof threads !== "number" || !Number.isInteger(threads) || threads < 1) {
    throw new WasmrtError(`init({threads}) takes a positive integer or "auto", got ${JSON.stringify(threads)}`);
  }
  return threads;
}

/** why not WebGPU etc.: "; "-joined after the runtime's own reason
 * @param {Choice | undefined} choice */
const skippedNote = (choice) => (choice?.skipped.length ? choice.skipped.join("; ") : "");

/** @param {Options} options @param {Choice} [choice] @returns {Promise<Runtime>} */
async function createWasm(options, choice) {
  const host = options.host ?? defaultHost();
  const features = builtFor(probe(host), options.modules);
  const chosen = chooseVariant(features, options.variant);
  const variant = /** @type {string} */ (chosen.variant), reason = chosen.reason; // scalar runs everywhere
  const skipped = skippedNote(choice);
  const asked = threadCount(options.threads);
  const noThreads = asked > 1 ? threadsUnavailable(host, variant) : null;
  if (asked > 1 && !noThreads) {
    return createThreaded(host, variant, reason, features, asked, options, skipped);
  }
  const threadsReason = asked > 1 ? `1 thread of ${asked}: ${noThreads}` : "1 thread (as asked)";
  const source = wasmSource(variant, options.wasmPaths, options.modules);
  let instance;
  try {
    instance = await host.instantiate(source, ENGINE_IMPORTS());
  } catch (e) {
    const err = /** @type {Error} */ (e);
    if (e instanceof WasmrtError) {
      throw new WasmrtError(`cannot load the ${variant} engine: ${err.message}`, { cause: e });
    }
    const from = typeof source === "string" || source instanceof URL ? ` from ${source}` : "";
    throw new WasmrtError(`cannot instantiate the ${variant} engine${from}: ${err.message}`, { cause: e });
  }
  /** @type {any} */
  const got = instance;
  // Some mini-program hosts resolve to {instance} instead of an Instance
  if (!got?.exports && got?.instance) instance = got.instance;
  return new Runtime(instance, { variant, reason, features, host, threads: 1, threadsReason, skipped,
    builtFor: options.modules?.models ?? null });
}

/** The variants a folder of modules built for given models (init({modules}), its wasmrt-modules.json) lacks count
 * as unavailable, saying so.
 * @param {any} features @param {Options["modules"]} modules @returns {any} */
function builtFor(features, modules) {
  if (!modules) return features;
  if (!modules.modules || !Array.isArray(modules.models)) {
    throw new WasmrtError("init({modules}) takes the parsed wasmrt-modules.json that wasmrt build --for writes");
  }
  /** @type {Record<string, any>} */
  const out = { ...features };
  for (const v of Object.keys(features)) {
    if (!modules.modules[v]) {
      out[v] = { available: false, reason: `not among the modules built for ${modules.models.join(", ")}` };
    }
  }
  return out;
}

// The threaded build: one module on a shared memory, instantiated here and in asked - 1 Workers.
/** @param {any} host @param {string} variant @param {string} reason @param {any} features @param {number} asked
 * @param {Options} options @param {string} skipped */
async function createThreaded(host, variant, reason, features, asked, options, skipped) {
  const file = `${variant}-mt`;
  if (options.modules && !options.modules.modules[file]) {
    throw new WasmrtError(`init({threads: ${asked}}): the modules built for ${options.modules.models.join(", ")} ` +
      `have no ${file} module (wasmrt build --for ... builds it unless --variant leaves it out)`);
  }
  const source = wasmSource(file, options.wasmPaths, options.modules);
  let module;
  try {
    const bytes = source instanceof Uint8Array || ArrayBuffer.isView(source) ? source : await host.readBytes(source);
    module = await WebAssembly.compile(bytes);
  } catch (e) {
    const err = /** @type {Error} */ (e);
    throw new WasmrtError(`cannot load the ${file} engine from ${source}: ${err.message}`, { cause: e });
  }
  const memory = sharedMemory();
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  /** @type {any[]} */
  let workers = [];
  let why = "";
  try {
    workers = await startThreads(module, memory, instance.exports, asked);
  } catch (e) {
    why = `: a Worker failed to start (${/** @type {Error} */ (e).message})`;
  }
  const threads = 1 + workers.length;
  const threadsReason = threads === asked ? `${threads} threads (as asked)` : `${threads} threads of ${asked}${why}`;
  return new Runtime(instance, { variant, reason, features, host, threads, threadsReason, workers, skipped,
    builtFor: options.modules?.models ?? null });
}

/** The C engine compiled to WebAssembly. @satisfies {Backend} */
export const wasmBackend = {
  name: /** @type {const} */ ("wasm"),
  label: "wasm",
  /** @param {Options} options @param {Choice} [choice] */
  create: (options, choice) => createWasm(options, choice),
};

/** The WGSL kernels on navigator.gpu; ops without a kernel can run on a wasm runtime of its own, made on first use
 * (load option fallback: "wasm"). @satisfies {Backend} */
export const webgpuBackend = {
  name: /** @type {const} */ ("webgpu"),
  label: "WebGPU",
  /** @param {Options} options @param {Choice} [choice] */
  async create(options, choice) {
    const { openDevice } = await import("./webgpu/backend.js");
    /** @type {Promise<Runtime> | null} */
    let wasm = null;
    return openDevice({
      host: options.host ?? defaultHost(),
      auto: choice?.auto ?? false,
      wasmRuntime: () => (wasm ??= createWasm({ ...options, threads: 1 })),
    });
  },
};

/** Every backend init() can name. */
export const BACKENDS = Object.freeze([webgpuBackend, wasmBackend]);
