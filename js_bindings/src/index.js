// wasmrt: on-device neural-network inference in WebAssembly.
//   const rt = await wasmrt.init();                       // picks relaxed > simd > scalar
//   const model = await rt.load("model.wrt");
//   const out = await model.run({ input: { data, shape } });

import { WasmrtError } from "./errors.js";
import { defaultHost } from "./host.js";
import { Runtime } from "./runtime.js";
import { chooseVariant, probe, VARIANTS } from "./variants.js";

export {
  ERROR_CODES, InputError, ModelFormatError, OutOfMemoryError, ResourceLimitError, UnsupportedOpError, WasmrtError,
} from "./errors.js";
export { defaultHost, nodeHost, webHost } from "./host.js";
export { readMetadata } from "./metadata.js";
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

/**
 * Instantiate the engine.
 * options.variant: "auto" (default) | "relaxed" | "simd" | "scalar"
 * options.wasmPaths: folder of the wasmrt-*.wasm files, or {variant: URL | path | bytes}
 * options.host: a host adapter (see host.js) for platforms without fetch/WebAssembly (mini-programs)
 */
export async function init(options = {}) {
  const host = options.host ?? defaultHost();
  const features = probe(host);
  const { variant, reason } = chooseVariant(features, options.variant);
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
  return new Runtime(instance, { variant, reason, features, host });
}

export const version = "0.1.0";
