// The contract every backend of init() implements (one implementation each in backends.js: wasm, webgpu). init()
// only ever talks to a backend through it, so a backend is added by implementing it and listing it in BACKENDS.
// tsc checks the implementations against it, and the public types of index.d.ts against the code
// (tests/js/backends-check.ts, run by tests/test_js_node.py).

import type { HostAdapter, InitOptions, ModelLike, ModelSource, Outputs } from "./index.js";

// The public types the implementations name in their JSDoc (through this file, so no .js module imports index.js)
export type { InitOptions, LoadOptions, TensorInfo } from "./index.js";

export type BackendName = "wasm" | "webgpu";

/** A model loaded by a backend's runtime. */
export interface BackendModel extends ModelLike {
  readonly released: boolean;
  run(feeds: any, options?: any): Promise<Outputs | Record<string, unknown>>;
  release(): void;
}

/** What a backend's create() resolves to: one engine instance, loading any number of models. */
export interface BackendRuntime {
  readonly backend: BackendName;
  /** Why this backend (and its variant) runs, and why the backends tried before it did not. */
  readonly reason: string;
  /** The host adapter's name. */
  readonly host: string;
  load(source: ModelSource, options?: { name?: string; host?: HostAdapter }): Promise<BackendModel>;
  loadBytes(bytes: Uint8Array, options?: { name?: string }): BackendModel | Promise<BackendModel>;
}

/** How init() came to a backend: named, or tried in turn by init({backend: "auto"}) after the ones in `skipped`
 * (each "<backend> not used: <why>"), which the runtime's reason then lists. */
export interface Choice {
  auto: boolean;
  skipped: readonly string[];
}

/** What init() knows of a backend. */
export interface Backend {
  readonly name: BackendName;
  /** Its name for people, as reasons say it ("WebGPU not used: ..."). */
  readonly label: string;
  /** A runtime on this host, or a rejection (a WasmrtError) saying why this backend cannot run here. */
  create(options: InitOptions, choice?: Choice): Promise<BackendRuntime>;
}
