// Compiled with `tsc --noEmit` by tests/test_js_node.py (tsconfig.json, allowJs): each backend of
// js_bindings/src/backends.js implements the contract of backend.d.ts (backends.js is type-checked, // @ts-check),
// and the runtimes and models the code makes have every member the public index.d.ts promises.
import type * as wasmrt from "wasmrt";
import type { Backend, BackendModel, BackendRuntime } from "../../js_bindings/src/backend.js";
import { BACKENDS, wasmBackend, webgpuBackend } from "../../js_bindings/src/backends.js";
import type { Model, Runtime, Stream } from "../../js_bindings/src/runtime.js";
import type { GpuModel, GpuRuntime, GpuTensor } from "../../js_bindings/src/webgpu/backend.js";
import type { AutoRuntime } from "../../js_bindings/src/auto.js";

export const all: readonly Backend[] = BACKENDS;
export const wasm: Backend = wasmBackend;
export const webgpu: Backend = webgpuBackend;

export function contract(rt: Runtime, m: Model, gpu: GpuRuntime, gm: GpuModel): [BackendRuntime[], BackendModel[]] {
  return [[rt, gpu], [m, gm]];
}

// never, or the members the public types promise and the code lacks (then the assignment below fails, naming them)
type Missing<Code, Promised> = Exclude<keyof Promised, keyof Code>;
export const promised: { [K in "Runtime" | "Model" | "Stream" | "WebGPURuntime" | "WebGPUModel" | "GpuTensor" | "AutoRuntime"]: never } = {
  Runtime: null as unknown as Missing<Runtime, wasmrt.Runtime>,
  Model: null as unknown as Missing<Model, wasmrt.Model>,
  Stream: null as unknown as Missing<Stream, wasmrt.Stream>,
  WebGPURuntime: null as unknown as Missing<GpuRuntime, wasmrt.WebGPURuntime>,
  WebGPUModel: null as unknown as Missing<GpuModel, wasmrt.WebGPUModel>,
  GpuTensor: null as unknown as Missing<GpuTensor, wasmrt.GpuTensor>,
  AutoRuntime: null as unknown as Missing<AutoRuntime, wasmrt.AutoRuntime>,
};
