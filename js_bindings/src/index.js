// wasmrt: on-device neural-network inference in WebAssembly.
//   const rt = await wasmrt.init();                       // picks relaxed > simd > scalar
//   const model = await rt.load("model.wrt");
//   const out = await model.run({ input: { data, shape } });

import { AutoRuntime } from "./auto.js";
import { BACKENDS, wasmBackend, webgpuBackend } from "./backends.js";
import { WasmrtError } from "./errors.js";
import { Runtime } from "./runtime.js";

export {
  ERROR_CODES, InputError, ModelFormatError, OutOfMemoryError, ResourceLimitError, TrainingError, UnsupportedOpError,
  WasmrtError,
} from "./errors.js";
export { defaultHost, nodeHost, webHost } from "./host.js";
export { readMetadata } from "./format/reader.js";
export { Model, Runtime, Stream } from "./runtime.js";
export { Trainer } from "./trainer.js";
export { ChainTrainer } from "./train/chain_trainer.js";
export { DTYPES, fromFloat16Bits, Tensor, toFloat16Bits } from "./tensor.js";
export { describeVariant, probe, VARIANTS } from "./variants.js";
export * as image from "./image.js";
// The face pipeline and the try-on are their own entry point: import { FaceMesh } from "wasmrt/vision".

/**
 * Instantiate a backend: the engine in WebAssembly (default) or the WebGPU kernels.
 * options.variant: "auto" (default) | "relaxed" | "simd" | "scalar"
 * options.threads: 1 (default), a number, or "auto" (the cores the host reports, at most 8); fewer where threads
 *   cannot run (rt.threads says how many, rt.reason why)
 * options.wasmPaths: folder of the wasmrt-*.wasm files, or {variant: URL | path | bytes}
 * options.host: a host adapter (see host.js) for platforms without fetch/WebAssembly (mini-programs)
 * options.backend: "wasm" (default) | "webgpu" (the WGSL kernels on navigator.gpu; an error says why when WebGPU
 *   is absent or broken) | "auto" (where WebGPU works, both: each model is loaded on both, timed in a short trial
 *   and kept on the faster, model.choice says which and why; elsewhere wasm, rt.reason says why).
 */
export async function init(options = {}) {
  const asked = options.backend ?? "wasm";
  const names = BACKENDS.map((b) => b.name);
  if (asked !== "auto") {
    const backend = BACKENDS.find((b) => b.name === asked);
    if (!backend) {
      const all = [...names, "auto"].map((n) => JSON.stringify(n));
      throw new WasmrtError(`init({backend}) takes ${all.slice(0, -1).join(", ")} or ${all.at(-1)}, not ${JSON.stringify(asked)}`);
    }
    if (backend === wasmBackend) return backend.create(options); // its errors say what failed already
    try {
      return await backend.create(options);
    } catch (e) {
      throw new WasmrtError(`init({backend: ${JSON.stringify(asked)}}): ${e.message}`, { cause: e });
    }
  }
  // auto: the wasm engine always; WebGPU beside it where it works, each model then kept on the faster (auto.js)
  let gpu;
  try {
    gpu = await webgpuBackend.create(options, { auto: true, skipped: [] });
  } catch (e) {
    return wasmBackend.create(options, { auto: true, skipped: [`WebGPU not used: ${e.message}`] });
  }
  return new AutoRuntime(await wasmBackend.create(options), gpu);
}

export const version = "0.1.0";
Runtime.packageVersion = version;
